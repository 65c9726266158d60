// libFuzzer target for the image decode path: any bytes, decoded as PNG or JPEG into each
// channel count, must give pixels or a frugal::Error — never a crash, a leak or an
// out-of-bounds access (built with AddressSanitizer by scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "data/image.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  frugal::data::Image image;
  // The first byte picks the channels asked for, so every conversion path gets exercised.
  const int channels = size > 0 ? data[0] % 5 : 0;
  try {
    frugal::data::decode_image(data, size, channels, "fuzz-input", image);
    volatile unsigned char sink = 0;
    if (image.shape.nbytes() > 0)
      sink = image.bytes()[image.shape.nbytes() - 1];  // the whole buffer is there
    (void)sink;
  } catch (const frugal::Error&) {
  }
  return 0;
}
