// libFuzzer target for the shard reader: any bytes parsed as a shard must be refused with a
// frugal::Error or give a view whose every sample lies inside the buffer (each is read
// whole, and encoded ones decoded); run under AddressSanitizer by scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "data/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A copy of exactly `size` bytes, so that ASan sees any read past the end.
  std::vector<std::uint8_t> bytes(data, data + size);
  try {
    const frugal::data::ShardView view =
        frugal::data::parse_shard(bytes.data(), bytes.size(), "fuzz.frs");
    unsigned sum = 0;
    frugal::data::Image image;
    for (std::uint64_t i = 0; i < view.count; ++i) {
      const auto entry = view.entry(i);
      const std::uint8_t* sample = view.sample(i);
      for (std::uint32_t k = 0; k < entry.length; ++k) sum += sample[k];
      if (view.encoding == frugal::data::ShardEncoding::Encoded) {
        try {
          frugal::data::decode_image(sample, entry.length, 0, "fuzz sample", image);
        } catch (const frugal::Error&) {
        }
      }
    }
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const frugal::Error&) {
  }
  return 0;
}
