// libFuzzer target for FRUGAL_ALLOC_CONF parsing: any text is refused with a ConfigError
// naming the key or value, or parses to settings whose text form parses back to the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "allocator/config.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  frugal::alloc::AllocatorConfig config;
  try {
    config = frugal::alloc::AllocatorConfig::parse(text);
  } catch (const frugal::Error&) {
    return 0;
  }
  // What was accepted must survive its own round trip (reports print to_string()).
  const std::string again = frugal::alloc::AllocatorConfig::parse(config.to_string()).to_string();
  if (again != config.to_string()) __builtin_trap();
  return 0;
}
