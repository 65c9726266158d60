// The batch-size finder on a GPU: its default budget counts only memory a step can have (what
// frugal's CUDA allocator holds plus the device's free memory, not the device's total), and a
// model on the GPU comes back from the search as it went in.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "allocator/default_allocators.h"
#include "common/cuda_check.h"
#include "nn/nn.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using frugal::test::bitwise_equal;
using frugal::test::kGpu;

namespace {

// Device memory taken with plain cudaMalloc, outside frugal's allocator, as another process or
// library would hold it; freed with the object.
class OutsideMemory {
 public:
  explicit OutsideMemory(std::size_t bytes) : bytes_(bytes) {
    FRUGAL_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~OutsideMemory() { (void)cudaFree(ptr_); }
  OutsideMemory(const OutsideMemory&) = delete;
  OutsideMemory& operator=(const OutsideMemory&) = delete;
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

std::size_t device_free() {
  std::size_t free = 0, total = 0;
  FRUGAL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace

TEST_CASE("cuda find_batch_size: the default budget leaves out memory held outside frugal",
          "[cuda][batch-size]") {
  manual_seed(21);
  auto model = nn::mlp();
  model->to(kGpu);
  std::vector<Tensor> before;
  for (const auto& [name, t] : model->state_dict()) before.push_back(t.clone());
  (void)matmul(randn({8, 8}, TensorOptions().device(kGpu)),
               randn({8, 8}, TensorOptions().device(kGpu)))
      .cpu();  // cuBLAS's handle and workspace exist before the free memory is read
  alloc::CachingAllocator& allocator = alloc::cuda_allocator(0);
  const auto total = allocator.memory_limit();
  // An eighth at most: ctest runs other CUDA tests beside this one on the same device.
  const OutsideMemory hog(std::min(total / 8, device_free() / 4));

  nn::BatchSizeFinderOptions options;
  options.max_batch = 64;  // small steps: only the budget is under test
  const nn::BatchSizeResult r = nn::find_batch_size(
      *model,
      [](const std::vector<Tensor>& p) {
        return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.05).momentum(0.9));
      },
      {1, 28, 28}, /*budget: the default*/ 0, options);
  INFO(nn::describe(r));
  // The device's total less the headroom would be 0.9 * total; what exists is less. (Only an
  // upper bound: other test processes on the device may take or give back memory meanwhile.)
  CHECK(static_cast<double>(r.budget) <= 0.9 * static_cast<double>(total - hog.bytes()));
  CHECK(r.batch == 64);
  CHECK(r.measured_peak <= r.budget);
  // The model on the GPU is as before the search (restored from the finder's host copies).
  const nn::NamedTensors after = model->state_dict();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO(after[i].first);
    CHECK(after[i].second.is_cuda());
    CHECK(bitwise_equal(after[i].second, before[i]));
  }
}
