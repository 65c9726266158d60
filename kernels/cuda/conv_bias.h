// A convolution's bias on CUDA devices, by frugal's own kernels rather than cuDNN's
// cudnnAddTensor / cudnnConvolutionBackwardBias, whose legacy API does not promise bfloat16.
// Used by kernels/cuda/conv.cpp after cuDNN's convolution; device pointers, current stream.
#pragma once

#include <cstdint>

namespace frugal::kernels::cuda {

// output[n, o, i] += bias[o] for output [N, O, spatial] (contiguous), in the compute type.
template <class T>
void add_channel_bias(T* output, const T* bias, std::int64_t N, std::int64_t O,
                      std::int64_t spatial);

// grad_bias[o] = sum over n and i of grad_output[n, o, i], summed in double, one block per
// channel, no atomics (the result repeats bit for bit); overwritten, zeros when N == 0.
template <class T>
void channel_sum(const T* grad_output, T* grad_bias, std::int64_t N, std::int64_t O,
                 std::int64_t spatial);

}  // namespace frugal::kernels::cuda
