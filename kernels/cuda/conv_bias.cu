// The bias kernels of a convolution: a broadcast add, one thread per output element
// (grid-stride), and the bias gradient, one block per channel summing its N * spatial values.
#include "kernels/cuda/conv_bias.h"

#include <string>

#include "common/error.h"
#include "kernels/cuda/common.cuh"

namespace frugal::kernels::cuda {
namespace {

template <class T>
__global__ void add_channel_bias_kernel(T* output, const T* bias, std::int64_t O,
                                        std::int64_t spatial, std::int64_t n) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const std::int64_t o = (i / spatial) % O;
    store(output + i, load(output + i) + load(bias + o));
  }
}

template <class T>
__global__ void channel_sum_kernel(const T* grad_output, T* grad_bias, std::int64_t N,
                                   std::int64_t O, std::int64_t spatial) {
  const std::int64_t o = blockIdx.x, total = N * spatial;
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < total; j += blockDim.x) {
    const std::int64_t n = j / spatial, i = j % spatial;
    sum += static_cast<double>(load(grad_output + (n * O + o) * spatial + i));
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) store(grad_bias + o, static_cast<compute_t<T>>(sum));
}

}  // namespace

template <class T>
void add_channel_bias(T* output, const T* bias, std::int64_t N, std::int64_t O,
                      std::int64_t spatial) {
  const std::int64_t n = N * O * spatial;
  if (n == 0) return;
  add_channel_bias_kernel<T>
      <<<blocks_for(n), kBlockSize, 0, stream()>>>(output, bias, O, spatial, n);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void channel_sum(const T* grad_output, T* grad_bias, std::int64_t N, std::int64_t O,
                 std::int64_t spatial) {
  if (O == 0) return;
  FRUGAL_CHECK(O < (std::int64_t{1} << 31),
               "conv2d bias gradient: " + std::to_string(O) + " channels exceed one launch");
  // N == 0 still launches: every block writes its zero sum.
  channel_sum_kernel<T><<<static_cast<unsigned>(O), kBlockSize, 0, stream()>>>(
      grad_output, grad_bias, N, O, spatial);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

#define FRUGAL_INSTANTIATE_CONV_BIAS(T)                                                      \
  template void add_channel_bias<T>(T*, const T*, std::int64_t, std::int64_t, std::int64_t); \
  template void channel_sum<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t);
FRUGAL_INSTANTIATE_CONV_BIAS(float)
FRUGAL_INSTANTIATE_CONV_BIAS(double)
FRUGAL_INSTANTIATE_CONV_BIAS(Half)
FRUGAL_INSTANTIATE_CONV_BIAS(BFloat16)
#undef FRUGAL_INSTANTIATE_CONV_BIAS

}  // namespace frugal::kernels::cuda
