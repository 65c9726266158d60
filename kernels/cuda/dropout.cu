// The CUDA dropout arithmetic: out = x * (mask ? scale : 0) in the compute type, one thread
// per element, exactly kernels/cpu/dropout.cpp's formula.
#include "kernels/cuda/dropout.h"

#include "kernels/cuda/common.cuh"

namespace frugal::kernels::cuda {

namespace {

template <class T>
__global__ void masked_scale_kernel(const T* x, const std::uint8_t* mask, compute_t<T> scale,
                                    T* out, std::int64_t n) {
  // Each element is read before it is written by the same thread, so out may alias x.
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    using C = compute_t<T>;
    store(out + i, static_cast<C>(load(x + i) * (mask[i] ? scale : C(0))));
  }
}

}  // namespace

template <class T>
void masked_scale(const T* x, const std::uint8_t* mask, double scale, T* out, std::int64_t n) {
  if (n <= 0) return;
  masked_scale_kernel<T><<<blocks_for(n), kBlockSize, 0, stream()>>>(
      x, mask, static_cast<compute_t<T>>(scale), out, n);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template void masked_scale<float>(const float*, const std::uint8_t*, double, float*, std::int64_t);
template void masked_scale<double>(const double*, const std::uint8_t*, double, double*,
                                   std::int64_t);
template void masked_scale<Half>(const Half*, const std::uint8_t*, double, Half*, std::int64_t);
template void masked_scale<BFloat16>(const BFloat16*, const std::uint8_t*, double, BFloat16*,
                                     std::int64_t);

}  // namespace frugal::kernels::cuda
