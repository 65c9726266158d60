// Which sanitizer this translation unit is built with (scripts/sanitize.sh): FRUGAL_ASAN for
// AddressSanitizer, FRUGAL_TSAN for ThreadSanitizer, under clang's and GCC's spellings. For
// code that must know: the allocator poisons its free bytes under ASan, and tests skip what a
// sanitizer changes on purpose (ASan's quarantine grows RSS; ASan and TSan make mlock a no-op).
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FRUGAL_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define FRUGAL_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FRUGAL_ASAN)
#define FRUGAL_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(FRUGAL_TSAN)
#define FRUGAL_TSAN 1
#endif

namespace frugal {

inline constexpr bool kAddressSanitizer =
#ifdef FRUGAL_ASAN
    true;
#else
    false;
#endif

inline constexpr bool kThreadSanitizer =
#ifdef FRUGAL_TSAN
    true;
#else
    false;
#endif

// ASan and TSan both turn mlock into a no-op (their shadow memory cannot be locked with it).
inline constexpr bool kSanitizerIgnoresMlock =
#if defined(FRUGAL_ASAN) || defined(FRUGAL_TSAN)
    true;
#else
    false;
#endif

}  // namespace frugal
