// Writing an image as a PNG file (8-bit gray, gray + alpha, RGB or RGBA), atomically, for
// pictures a program shows its user (frugal-train --preview).
#pragma once

#include <cstdint>
#include <string>

namespace frugal::data {

// `pixels`: height x width x channels bytes, rows top to bottom. The file appears whole or
// not at all (data/file_io.h's AtomicFile); errors name it.
void write_png(const std::string& path, int height, int width, int channels,
               const std::uint8_t* pixels);

}  // namespace frugal::data
