// libFuzzer target for the idx reader, plain and gzip. The first byte picks how the rest
// reaches the reader: as it is (the fuzzer's bytes may start with gzip's magic), or gzip-
// compressed first, so that the idx parser behind the decompressor is explored as well as the
// decompressor's handling of corrupt streams.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "allocator/out_of_memory_error.h"
#include "common/error.h"
#include "data/idx.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream zs{};
  std::vector<std::uint8_t> out(compressBound(size) + 64);
  deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  frugal::fuzz::limit_allocator();
  const bool compress = (data[0] & 1) != 0;
  const std::vector<std::uint8_t> bytes =
      compress ? gzip(data + 1, size - 1) : std::vector<std::uint8_t>(data + 1, data + size);
  frugal::fuzz::MemoryFile file(bytes.data(), bytes.size());
  try {
    const frugal::Tensor t = frugal::data::read_idx(file.path());
    const auto* p = static_cast<const std::uint8_t*>(t.data_ptr());
    unsigned sum = 0;
    for (std::size_t i = 0; i < t.nbytes(); ++i) sum += p[i];
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const frugal::OutOfMemoryError&) {
    __builtin_trap();  // the header's dims were believed before the file's size was checked
  } catch (const frugal::Error&) {
  }
  return 0;
}
