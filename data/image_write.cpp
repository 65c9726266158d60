// PNG encoding with stb_image_write (static: the examples and tests that compile their own
// copy of it link beside this one), written through an AtomicFile.
#include "data/image_write.h"

#include <vector>

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

#include "common/error.h"
#include "data/file_io.h"

namespace frugal::data {

void write_png(const std::string& path, int height, int width, int channels,
               const std::uint8_t* pixels) {
  FRUGAL_CHECK(height > 0 && width > 0, "write_png " + path + ": empty image of " +
                                            std::to_string(height) + "x" + std::to_string(width));
  FRUGAL_CHECK(channels >= 1 && channels <= 4,
               "write_png " + path + ": channels must be 1 to 4, got " + std::to_string(channels));
  std::vector<unsigned char> encoded;
  const auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<unsigned char>*>(context);
    const auto* bytes = static_cast<const unsigned char*>(data);
    out->insert(out->end(), bytes, bytes + size);
  };
  if (!stbi_write_png_to_func(append, &encoded, width, height, channels, pixels,
                              width * channels))
    throw Error("write_png " + path + ": encoding failed");
  AtomicFile file(path, "write_png");
  file.write(encoded.data(), encoded.size());
  file.commit();
}

}  // namespace frugal::data
