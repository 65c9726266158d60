// Pooling ops and their backward: tensors to kernels/cpu/pool.h. Max pooling's backward
// needs only one byte per output (the argmax's place in its window, not the input); average
// pooling's needs only shapes.
#include "engine/ops/pool.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
namespace cpu = kernels::cpu;

namespace {

void check_4d(const Tensor& input, const char* op) {
  FRUGAL_CHECK(input.dim() == 4, std::string(op) +
                                     ": expected a 4-d input [N, C, H, W], got shape " +
                                     shape_string(input.sizes()));
}

cpu::Pool2dParams pool_params(const Tensor& input, Int2 kernel, std::optional<Int2> stride,
                              Int2 padding, Int2 dilation, bool ceil_mode, bool average) {
  check_4d(input, average ? "avg_pool2d" : "max_pool2d");
  const Int2 s = stride.value_or(kernel);
  cpu::Pool2dParams p;
  p.N = input.size(0);
  p.C = input.size(1);
  p.H = input.size(2);
  p.W = input.size(3);
  p.kH = kernel[0];
  p.kW = kernel[1];
  p.stride_h = s[0];
  p.stride_w = s[1];
  p.pad_h = padding[0];
  p.pad_w = padding[1];
  p.dilation_h = dilation[0];
  p.dilation_w = dilation[1];
  p.ceil_mode = ceil_mode;
  cpu::validate_pool2d(p, average);
  return p;
}

}  // namespace

Tensor max_pool2d(const Tensor& input_, Int2 kernel_size, std::optional<Int2> stride, Int2 padding,
                  Int2 dilation, bool ceil_mode) {
  const cpu::Pool2dParams p =
      pool_params(input_, kernel_size, stride, padding, dilation, ceil_mode, false);
  const Tensor input = input_.contiguous();
  Tensor out = empty({p.N, p.C, p.out_h(), p.out_w()}, input.options());
  // Only a backward needs the argmax, and then only its place inside the window: one byte
  // per output (a quarter of a float32 output; PyTorch keeps eight-byte plane offsets).
  const bool records = autograd::needs_grad(input_);
  Tensor window_index = records ? empty(out.sizes(), out.options().dtype(kUInt8)) : Tensor();
  dispatch_floating(input.dtype(), "max_pool2d", [&]<class T>() {
    FRUGAL_KERNEL(input.device(), max_pool2d_forward_compact<T>)
    (p, input.data_ptr<T>(), out.data_ptr<T>(),
     records ? window_index.data_ptr<std::uint8_t>() : nullptr);
  });
  if (records) {
    autograd::record(
        out, "max_pool2d", {input_}, [p, window_index](const Tensor& g, InputGrads& gi) {
          const Tensor gc = g.contiguous();
          Tensor grad = empty({p.N, p.C, p.H, p.W}, gc.options());
          dispatch_floating(g.dtype(), "max_pool2d_backward", [&]<class T>() {
            FRUGAL_KERNEL(gc.device(), max_pool2d_backward_compact<T>)
            (p, gc.data_ptr<T>(), window_index.data_ptr<std::uint8_t>(), grad.data_ptr<T>());
          });
          gi[0] = std::move(grad);
        });
  }
  return out;
}

Tensor avg_pool2d(const Tensor& input_, Int2 kernel_size, std::optional<Int2> stride, Int2 padding,
                  bool ceil_mode, bool count_include_pad) {
  cpu::Pool2dParams p = pool_params(input_, kernel_size, stride, padding, {1, 1}, ceil_mode, true);
  p.count_include_pad = count_include_pad;
  const Tensor input = input_.contiguous();
  Tensor out = empty({p.N, p.C, p.out_h(), p.out_w()}, input.options());
  dispatch_floating(input.dtype(), "avg_pool2d", [&]<class T>() {
    FRUGAL_KERNEL(input.device(), avg_pool2d_forward<T>)(p, input.data_ptr<T>(), out.data_ptr<T>());
  });
  if (autograd::needs_grad(input_)) {
    autograd::record(out, "avg_pool2d", {input_}, [p](const Tensor& g, InputGrads& gi) {
      const Tensor gc = g.contiguous();
      Tensor grad = empty({p.N, p.C, p.H, p.W}, gc.options());
      dispatch_floating(g.dtype(), "avg_pool2d_backward", [&]<class T>() {
        FRUGAL_KERNEL(gc.device(), avg_pool2d_backward<T>)(p, gc.data_ptr<T>(), grad.data_ptr<T>());
      });
      gi[0] = std::move(grad);
    });
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input_, Int2 output_size) {
  check_4d(input_, "adaptive_avg_pool2d");
  cpu::AdaptivePool2dParams p;
  p.N = input_.size(0);
  p.C = input_.size(1);
  p.H = input_.size(2);
  p.W = input_.size(3);
  p.out_h = output_size[0];
  p.out_w = output_size[1];
  cpu::validate_adaptive_pool2d(p);
  const Tensor input = input_.contiguous();
  Tensor out = empty({p.N, p.C, p.out_h, p.out_w}, input.options());
  dispatch_floating(input.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    FRUGAL_KERNEL(input.device(), adaptive_avg_pool2d_forward<T>)
    (p, input.data_ptr<T>(), out.data_ptr<T>());
  });
  if (autograd::needs_grad(input_)) {
    autograd::record(out, "adaptive_avg_pool2d", {input_}, [p](const Tensor& g, InputGrads& gi) {
      const Tensor gc = g.contiguous();
      Tensor grad = empty({p.N, p.C, p.H, p.W}, gc.options());
      dispatch_floating(g.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
        FRUGAL_KERNEL(gc.device(), adaptive_avg_pool2d_backward<T>)
        (p, gc.data_ptr<T>(), grad.data_ptr<T>());
      });
      gi[0] = std::move(grad);
    });
  }
  return out;
}

}  // namespace frugal
