// AddressSanitizer over the caching allocator's own memory: bytes of a host segment that no
// live allocation owns are poisoned, so a kernel that reads past a tensor's end or a tensor
// used after its storage went back to the cache is reported like a heap overflow or a
// use-after-free. Without -fsanitize=address both functions compile to nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/sanitizers.h"

#ifdef FRUGAL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace frugal::alloc {

// The segments come from mmap, which ASan does not track: without this, a read past a
// tensor lands in the next cached block and nothing notices.
inline constexpr bool kPoisonsCachedMemory = kAddressSanitizer;

inline void poison_memory(std::uintptr_t address, std::size_t bytes) {
#ifdef FRUGAL_ASAN
  if (bytes != 0) ASAN_POISON_MEMORY_REGION(reinterpret_cast<void*>(address), bytes);
#else
  (void)address, (void)bytes;
#endif
}

inline void unpoison_memory(std::uintptr_t address, std::size_t bytes) {
#ifdef FRUGAL_ASAN
  if (bytes != 0) ASAN_UNPOISON_MEMORY_REGION(reinterpret_cast<void*>(address), bytes);
#else
  (void)address, (void)bytes;
#endif
}

}  // namespace frugal::alloc
