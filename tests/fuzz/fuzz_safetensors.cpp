// libFuzzer target for the safetensors reader: any bytes must give a frugal::Error, or tensors
// whose every byte can be read (summed, and crc32'd as the checkpoint loader does).
#include <cstddef>
#include <cstdint>

#include "allocator/out_of_memory_error.h"
#include "common/error.h"
#include "data/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  frugal::fuzz::limit_allocator();
  frugal::fuzz::MemoryFile file(data, size);
  try {
    const frugal::data::SafetensorsFile st = frugal::data::load_safetensors(file.path());
    unsigned sum = 0;
    for (const auto& [name, t] : st.tensors) {
      const auto* bytes = static_cast<const std::uint8_t*>(t.data_ptr());
      for (std::size_t i = 0; i < t.nbytes(); ++i) sum += bytes[i];
      sum += frugal::data::tensor_crc32(t);
    }
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const frugal::OutOfMemoryError&) {
    __builtin_trap();  // a few KiB of input made the reader ask for 256 MiB
  } catch (const frugal::Error&) {
  }
  return 0;
}
