// The kernels an op can run, and the one line that picks the device's: every kernel family of
// kernels/cpu, and of kernels/cuda in a build with CUDA, whose functions mirror the CPU ones
// name for name and argument for argument. An op writes
//   FRUGAL_KERNEL(x.device(), softmax<T>)(x_ptr, y_ptr, outer, dim, inner);
// and the call goes to kernels::cuda::softmax<T> for a CUDA tensor, kernels::cpu::softmax<T>
// otherwise (a CPU-only build has no other choice, and never makes a CUDA tensor).
#pragma once

#include <utility>

#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/optim.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/softmax.h"

#if FRUGAL_WITH_CUDA
#include "kernels/cuda/batch_norm.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/optim.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/random.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/stream.h"

// A callable that forwards its arguments to the kernel `...` (a name with its template
// arguments, commas allowed) of the device's backend. Default arguments work as in a direct call.
// A CUDA kernel runs with the tensor's device made current, as PyTorch's ops do: its launches,
// stream, library handles and scratch memory are then that device's whichever is current.
#define FRUGAL_KERNEL(device, ...)                                                       \
  [&](auto&&... frugal_kernel_args) {                                                    \
    if ((device).is_cuda()) {                                                            \
      const ::frugal::kernels::cuda::DeviceGuard frugal_kernel_device((device).index()); \
      return ::frugal::kernels::cuda::__VA_ARGS__(                                       \
          std::forward<decltype(frugal_kernel_args)>(frugal_kernel_args)...);            \
    }                                                                                    \
    return ::frugal::kernels::cpu::__VA_ARGS__(                                          \
        std::forward<decltype(frugal_kernel_args)>(frugal_kernel_args)...);              \
  }
#else
#define FRUGAL_KERNEL(device, ...)                                          \
  [&](auto&&... frugal_kernel_args) {                                       \
    return ::frugal::kernels::cpu::__VA_ARGS__(                             \
        std::forward<decltype(frugal_kernel_args)>(frugal_kernel_args)...); \
  }
#endif
