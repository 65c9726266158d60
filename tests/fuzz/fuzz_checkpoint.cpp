// libFuzzer target for frugal-train's checkpoint loader: model, optimizer (SGD with momentum)
// and loss-scaler state from one safetensors file. Any bytes must give a frugal::Error naming
// the file, or a state that loads into the model (tests/fuzz/fuzz_model.h) and trains a step.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "allocator/out_of_memory_error.h"
#include "common/error.h"
#include "examples/train/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  frugal::fuzz::limit_allocator();
  static frugal::fuzz::CheckpointSubject subject;
  frugal::fuzz::MemoryFile file(data, size);
  try {
    frugal::train::load_checkpoint(file.path(), *subject.model, *subject.optimizer, *subject.scaler,
                                   subject.expect);
    subject.step();  // what was loaded is usable
  } catch (const frugal::OutOfMemoryError&) {
    __builtin_trap();
  } catch (const frugal::Error&) {
  }
  subject.reset();
  return 0;
}
