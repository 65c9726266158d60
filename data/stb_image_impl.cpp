// The one translation unit that compiles stb_image's decoder (Debian's libstb-dev header),
// restricted to PNG and JPEG and to images of at most 2^15 pixels a side, with its own
// memory-only reader: frugal reads files itself so errors name them.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS (1 << 15)
// stb_image asserts on inconsistent Huffman tables after it has already bounds-checked the
// symbol (stbi__jpeg_huff_decode): in a Release build the assert is gone and the file decodes
// to garbage or fails; in a Debug or fuzzing build it would abort the process on a damaged
// JPEG. Compiled out in every build, so damaged input never aborts and the fuzzers (with
// AddressSanitizer) still catch any real out-of-bounds access.
#define STBI_ASSERT(x) ((void)0)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
