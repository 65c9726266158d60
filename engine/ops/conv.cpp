// conv2d and its backward: tensors to kernels/cpu/conv.h (or cuDNN's, falling back to cheaper
// algorithms when their workspace cannot be had). The backward saves the input and the weight
// (what PyTorch saves) and computes only the gradients that are asked for.
#include "engine/ops/conv.h"

#include <cstddef>
#include <vector>

#include "allocator/out_of_memory_error.h"
#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"
#include "engine/ops/reduce.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
namespace cpu = kernels::cpu;

namespace {

cpu::Conv2dParams conv_params(const Tensor& input, const Tensor& weight, Int2 stride, Int2 padding,
                              Int2 dilation, std::int64_t groups) {
  FRUGAL_CHECK(input.dim() == 4, "conv2d: expected a 4-d input [N, C, H, W], got shape " +
                                     shape_string(input.sizes()));
  FRUGAL_CHECK(weight.dim() == 4,
               "conv2d: expected a 4-d weight [O, C / groups, kH, kW], got shape " +
                   shape_string(weight.sizes()));
  FRUGAL_CHECK(groups >= 1 && input.size(1) % groups == 0 && weight.size(0) % groups == 0 &&
                   weight.size(1) * groups == input.size(1),
               "conv2d: input " + shape_string(input.sizes()) + ", weight " +
                   shape_string(weight.sizes()) + " and groups=" + std::to_string(groups) +
                   " do not fit (expected weight.size(1) * groups == input channels, both "
                   "channel counts divisible by groups)");
  cpu::Conv2dParams p;
  p.N = input.size(0);
  p.C = input.size(1);
  p.H = input.size(2);
  p.W = input.size(3);
  p.O = weight.size(0);
  p.kH = weight.size(2);
  p.kW = weight.size(3);
  p.stride_h = stride[0];
  p.stride_w = stride[1];
  p.pad_h = padding[0];
  p.pad_w = padding[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.groups = groups;
  cpu::validate_conv2d(p);
  return p;
}

// Scratch bytes from the caching allocator, held for the duration of one kernel call.
Tensor workspace(std::size_t bytes, Device device) {
  return empty({static_cast<std::int64_t>(bytes)}, TensorOptions(kUInt8).device(device));
}

enum class Pass { kForward, kBackwardInput, kBackwardWeight };

// cuDNN's workspace sizes for one pass on `device`, from the preferred algorithm's down to
// the smallest (asked with the device current, as FRUGAL_KERNEL runs the kernel).
template <class T>
std::vector<std::size_t> cuda_workspace_fallbacks([[maybe_unused]] Pass pass,
                                                  [[maybe_unused]] const cpu::Conv2dParams& p,
                                                  [[maybe_unused]] Device device) {
#if FRUGAL_WITH_CUDA
  namespace cuda = kernels::cuda;
  const cuda::DeviceGuard guard(device.index());
  switch (pass) {
    case Pass::kForward:
      return cuda::conv2d_forward_workspace_fallbacks<T>(p);
    case Pass::kBackwardInput:
      return cuda::conv2d_backward_input_workspace_fallbacks<T>(p);
    case Pass::kBackwardWeight:
      return cuda::conv2d_backward_weight_workspace_fallbacks<T>(p);
  }
#endif
  return {};  // no CUDA tensors without CUDA
}

// Runs `kernel(workspace_ptr, workspace_bytes)` with `preferred` bytes of workspace from the
// caching allocator. On CUDA, cuDNN's fastest algorithm may want more scratch than the GPU has
// left while a slower one needs less or none (implicit GEMM needs none): so when the allocator,
// which has already released its cache and retried, cannot give `preferred`, take the largest
// smaller size cuDNN ranks next that it can give, and the kernel runs that algorithm, as
// PyTorch walks cuDNN's perf results. If none can be had, the first OutOfMemoryError is thrown.
// On the CPU the workspace is required, and an OutOfMemoryError is thrown as is.
template <class T, class Kernel>
void with_workspace(Pass pass, const cpu::Conv2dParams& p, Device device, std::size_t preferred,
                    Kernel&& kernel) {
  std::size_t bytes = preferred;
  Tensor ws;
  try {
    ws = workspace(bytes, device);
  } catch (const OutOfMemoryError&) {
    if (!device.is_cuda()) throw;
    for (const std::size_t smaller : cuda_workspace_fallbacks<T>(pass, p, device)) {
      if (smaller >= preferred) continue;
      try {
        ws = workspace(smaller, device);
        bytes = smaller;
        break;
      } catch (const OutOfMemoryError&) {
        // still too much: the next size is smaller
      }
    }
    if (bytes == preferred) throw;  // nothing smaller could be had either
  }
  kernel(ws.data_ptr(), bytes);
}

Tensor conv_backward_input(const cpu::Conv2dParams& p, const Tensor& grad_out,
                           const Tensor& weight) {
  Tensor grad_input = empty({p.N, p.C, p.H, p.W}, grad_out.options());
  const Device device = grad_out.device();
  dispatch_floating(grad_out.dtype(), "conv2d_backward", [&]<class T>() {
    const int threads = cpu::get_num_threads();
    const std::size_t bytes =
        FRUGAL_KERNEL(device, conv2d_backward_input_workspace_bytes<T>)(p, threads);
    with_workspace<T>(Pass::kBackwardInput, p, device, bytes, [&](void* ws, std::size_t ws_bytes) {
      FRUGAL_KERNEL(device, conv2d_backward_input<T>)
      (p, grad_out.data_ptr<T>(), weight.data_ptr<T>(), grad_input.data_ptr<T>(), ws, ws_bytes);
    });
  });
  return grad_input;
}

void conv_backward_weight(const cpu::Conv2dParams& p, const Tensor& grad_out, const Tensor& input,
                          Tensor* grad_weight, Tensor* grad_bias) {
  *grad_weight = empty({p.O, p.C / p.groups, p.kH, p.kW}, grad_out.options());
  if (grad_bias) *grad_bias = empty({p.O}, grad_out.options());
  const Device device = grad_out.device();
  dispatch_floating(grad_out.dtype(), "conv2d_backward", [&]<class T>() {
    const int threads = cpu::get_num_threads();
    const std::size_t bytes =
        FRUGAL_KERNEL(device, conv2d_backward_weight_workspace_bytes<T>)(p, threads);
    with_workspace<T>(Pass::kBackwardWeight, p, device, bytes, [&](void* ws, std::size_t ws_bytes) {
      T* const bias_grad = grad_bias ? grad_bias->data_ptr<T>() : nullptr;
      FRUGAL_KERNEL(device, conv2d_backward_weight<T>)
      (p, grad_out.data_ptr<T>(), input.data_ptr<T>(), grad_weight->data_ptr<T>(), bias_grad, ws,
       ws_bytes);
    });
  });
}

}  // namespace

Tensor conv2d(const Tensor& input_, const Tensor& weight_, const Tensor& bias_, Int2 stride,
              Int2 padding, Int2 dilation, std::int64_t groups) {
  if (autocast::should_apply(input_.device()))
    return autocast::call(
        autocast::Op::kConv2d, input_.device(),
        [&](const Tensor& x, const Tensor& w, const Tensor& b) {
          return conv2d(x, w, b, stride, padding, dilation, groups);
        },
        input_, weight_, bias_);
  const cpu::Conv2dParams p = conv_params(input_, weight_, stride, padding, dilation, groups);
  detail::check_same_device(input_, weight_, "conv2d");
  if (bias_.defined()) detail::check_same_device(input_, bias_, "conv2d");
  FRUGAL_CHECK(input_.dtype() == weight_.dtype(),
               std::string("conv2d: input is ") + dtype_name(input_.dtype()) + " but weight is " +
                   dtype_name(weight_.dtype()));
  if (bias_.defined())
    FRUGAL_CHECK(bias_.dim() == 1 && bias_.size(0) == p.O && bias_.dtype() == input_.dtype(),
                 "conv2d: bias must be a " + std::string(dtype_name(input_.dtype())) +
                     " vector of " + std::to_string(p.O) + " values, got " +
                     dtype_name(bias_.dtype()) + " " + shape_string(bias_.sizes()));
  const Tensor input = input_.contiguous(), weight = weight_.contiguous();
  const Tensor bias = bias_.defined() ? bias_.contiguous() : Tensor();
  Tensor out = empty({p.N, p.O, p.out_h(), p.out_w()}, input.options());
  dispatch_floating(input.dtype(), "conv2d", [&]<class T>() {
    // The workspace comes from the device's caching allocator (so it shows in its stats); on
    // CUDA its size is that of the algorithm cuDNN prefers for this shape, or a smaller one
    // when the GPU cannot give that (with_workspace).
    const Device device = input.device();
    const std::size_t bytes =
        FRUGAL_KERNEL(device, conv2d_forward_workspace_bytes<T>)(p, cpu::get_num_threads());
    with_workspace<T>(Pass::kForward, p, device, bytes, [&](void* ws, std::size_t ws_bytes) {
      FRUGAL_KERNEL(device, conv2d_forward<T>)
      (p, input.data_ptr<T>(), weight.data_ptr<T>(), data_ptr_or_null<T>(bias), out.data_ptr<T>(),
       ws, ws_bytes);
    });
  });
  if (autograd::needs_grad(input_, weight_, bias_)) {
    autograd::record(out, "conv2d", {input_, weight_, bias_},
                     [p, sx = save(autograd::requires_grad(weight_) ? input : Tensor(), "conv2d"),
                      sw = save(autograd::requires_grad(input_) ? weight : Tensor(), "conv2d")](
                         const Tensor& g, InputGrads& gi) {
                       const Tensor gc = g.contiguous();
                       if (gi.needs(0)) gi[0] = conv_backward_input(p, gc, sw.unpack());
                       if (gi.needs(1) || gi.needs(2)) {
                         Tensor gw, gb;
                         if (gi.needs(1)) {
                           conv_backward_weight(p, gc, sx.unpack(), &gw,
                                                gi.needs(2) ? &gb : nullptr);
                         } else {
                           gb = sum(gc, {0, 2, 3});
                         }
                         if (gi.needs(1)) gi[1] = std::move(gw);
                         if (gi.needs(2)) gi[2] = std::move(gb);
                       }
                     });
  }
  return out;
}

}  // namespace frugal
