// In a CUDA build, cuBLAS stays out of a process until the first GEMM on a GPU: CPU work does not
// load it (it would cost ~210 MiB of resident memory), and loading it finds every function.
// Runs without a GPU: opening a library and looking up symbols needs no device.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "engine/frugal.h"
#include "kernels/cuda/cublas_library.h"

using namespace frugal;

namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(library) != std::string::npos;
}

}  // namespace

TEST_CASE("cuBLAS is not loaded by CPU work in a CUDA build", "[cuda_library]") {
  Tensor a = randn({64, 32}), b = randn({32, 16}, TensorOptions().requires_grad(true));
  Tensor y = matmul(a, b).sum();
  y.backward();
  REQUIRE(b.grad().defined());
  CHECK_FALSE(mapped("libcublas"));
}

TEST_CASE("cuBLAS loads on first use with every function frugal calls", "[cuda_library]") {
  const kernels::cuda::CublasLibrary& api = kernels::cuda::cublas();
  CHECK(api.create != nullptr);
  CHECK(api.destroy != nullptr);
  CHECK(api.set_stream != nullptr);
  CHECK(api.set_workspace != nullptr);
  CHECK(api.set_math_mode != nullptr);
  CHECK(api.get_status_string != nullptr);
  CHECK(api.gemm_ex != nullptr);
  CHECK(api.gemm_strided_batched_ex != nullptr);
  CHECK(mapped("libcublas"));
  CHECK(&kernels::cuda::cublas() == &api);  // loaded once
  CHECK(std::string(api.get_status_string(CUBLAS_STATUS_SUCCESS)) == "success");
}
