// Reductions and softmax: tensors to the kernels of kernels/cpu/reduce.h and softmax.h, with
// each backward beside its forward. A reduction's gradient is the incoming gradient
// broadcast back over the reduced dims (an expand, so no memory is spent on the copy).
#include "engine/ops/reduce.h"

#include <limits>
#include <tuple>

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/copy.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;
namespace cpu = kernels::cpu;

namespace {

cpu::StridedDims strided_dims(const Tensor& t) {
  cpu::StridedDims d;
  d.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = t.sizes()[static_cast<std::size_t>(i)];
    d.strides[i] = t.strides()[static_cast<std::size_t>(i)];
  }
  return d;
}

// Which dims a reduction over `dims` removes; an empty list means every dim, as in PyTorch.
std::uint32_t reduce_mask(const Tensor& x, IntArrayRef dims, const char* op) {
  if (dims.empty()) return x.dim() == 0 ? 0u : (1u << x.dim()) - 1u;
  std::uint32_t mask = 0;
  for (std::int64_t d : dims) {
    const int w = wrap_dim(d, x.dim(), op);
    FRUGAL_CHECK(!(mask & cpu::dim_bit(w)), std::string(op) + ": dim " + std::to_string(w) +
                                                " appears more than once in " + shape_string(dims));
    if (x.dim() > 0) mask |= cpu::dim_bit(w);
  }
  return mask;
}

// The output shape of a reduction over `mask`.
DimVector reduced_sizes(const Tensor& x, std::uint32_t mask, bool keepdim) {
  DimVector out;
  for (int d = 0; d < x.dim(); ++d) {
    if (!(mask & cpu::dim_bit(d)))
      out.push_back(x.sizes()[static_cast<std::size_t>(d)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

std::int64_t reduced_count(const Tensor& x, std::uint32_t mask) {
  std::int64_t n = 1;
  for (int d = 0; d < x.dim(); ++d)
    if (mask & cpu::dim_bit(d)) n *= x.sizes()[static_cast<std::size_t>(d)];
  return n;
}

// The gradient of a reduction's output, broadcast back to the input's shape.
struct Unreduce {
  DimVector input_sizes;
  std::uint32_t mask;
  bool keepdim;
  Tensor operator()(const Tensor& g) const {
    Tensor grad = g;
    if (!keepdim)
      for (int d = 0; d < static_cast<int>(input_sizes.size()); ++d)
        if (mask & cpu::dim_bit(d)) grad = grad.unsqueeze(d);
    return grad.expand(input_sizes);
  }
};

ScalarType sum_dtype(ScalarType t) { return is_integral(t, true) ? kInt64 : t; }

Tensor sum_impl(const Tensor& x, std::uint32_t mask, bool keepdim) {
  Tensor out = empty(reduced_sizes(x, mask, keepdim), x.options().dtype(sum_dtype(x.dtype())));
  dispatch_all(x.dtype(), "sum", [&]<class T>() {
    FRUGAL_KERNEL(x.device(), sum<T>)
    (x.data_ptr<T>(), strided_dims(x), mask, out.data_ptr<cpu::sum_t<T>>());
  });
  if (autograd::needs_grad(x)) {
    autograd::record(out, "sum", {x},
                     [u = Unreduce{DimVector(x.sizes()), mask, keepdim}](
                         const Tensor& g, InputGrads& gi) { gi[0] = u(g); });
  }
  return out;
}

Tensor mean_impl(const Tensor& x, std::uint32_t mask, bool keepdim) {
  Tensor out = empty(reduced_sizes(x, mask, keepdim), x.options());
  dispatch_floating(x.dtype(), "mean", [&]<class T>() {
    FRUGAL_KERNEL(x.device(), mean<T>)(x.data_ptr<T>(), strided_dims(x), mask, out.data_ptr<T>());
  });
  if (autograd::needs_grad(x)) {
    autograd::record(
        out, "mean", {x},
        [u = Unreduce{DimVector(x.sizes()), mask, keepdim}, n = reduced_count(x, mask)](
            const Tensor& g, InputGrads& gi) { gi[0] = u(div(g, static_cast<double>(n))); });
  }
  return out;
}

// max() / min() over everything: the gradient is shared evenly by every position that
// holds the extreme value, as PyTorch does.
Tensor extreme_all(const Tensor& x, bool is_max) {
  const char* name = is_max ? "max" : "min";
  FRUGAL_CHECK(x.numel() > 0, std::string(name) +
                                  "(): expected a non-empty tensor; reduce over a dim instead, or "
                                  "check the input of shape " +
                                  shape_string(x.sizes()));
  Tensor out = empty({}, x.options());
  const std::uint32_t mask = reduce_mask(x, {}, name);
  dispatch_all(x.dtype(), name, [&]<class T>() {
    if (is_max)
      FRUGAL_KERNEL(x.device(), amax<T>)(x.data_ptr<T>(), strided_dims(x), mask, out.data_ptr<T>());
    else
      FRUGAL_KERNEL(x.device(), amin<T>)(x.data_ptr<T>(), strided_dims(x), mask, out.data_ptr<T>());
  });
  if (autograd::needs_grad(x)) {
    autograd::record(out, name, {x},
                     [sx = save(x, name), so = save(out, name)](const Tensor& g, InputGrads& gi) {
                       const Tensor hit = eq(sx.unpack(), so.unpack()).to(g.dtype());
                       gi[0] = mul(hit, div(g, sum(hit)));
                     });
  }
  return out;
}

// Scatters the gradient of the values of max(x, dim) to the positions of the maxima. On a
// CUDA device as where(position == index, g, 0) along dim, from kernels that exist there.
Tensor scatter_to_indices(const Tensor& g, const Tensor& indices, IntArrayRef input_sizes, int dim,
                          bool keepdim) {
  const Tensor gk = keepdim ? g : g.unsqueeze(dim), ik = keepdim ? indices : indices.unsqueeze(dim);
  if (!g.is_cpu()) {
    DimVector position_shape(input_sizes.size(), 1);
    if (!input_sizes.empty())
      position_shape[static_cast<std::size_t>(dim)] = input_sizes[static_cast<std::size_t>(dim)];
    const Tensor positions =
        arange(0, input_sizes.empty() ? 1 : input_sizes[static_cast<std::size_t>(dim)], 1,
               ik.options())
            .view(position_shape);
    const Tensor grad = where(eq(positions, ik), gk, zeros({}, g.options()));
    return IntArrayRef(grad.sizes()) == input_sizes ? grad : grad.expand(input_sizes).contiguous();
  }
  Tensor grad = zeros(input_sizes, g.dtype());
  const Tensor gc = gk.contiguous();
  const Tensor ic = ik.contiguous();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= input_sizes[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < input_sizes.size(); ++d)
    inner *= input_sizes[d];
  const std::int64_t len = input_sizes.empty() ? 1 : input_sizes[static_cast<std::size_t>(dim)];
  dispatch_floating(g.dtype(), "max_backward", [&]<class T>() {
    const T* gp = gc.data_ptr<T>();
    const std::int64_t* ip = ic.data_ptr<std::int64_t>();
    T* out = grad.data_ptr<T>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i)
        out[(o * len + ip[o * inner + i]) * inner + i] = gp[o * inner + i];
  });
  return grad;
}

ValuesIndices extreme_dim(const Tensor& x, std::int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  const int d = wrap_dim(dim, x.dim(), name);
  const std::uint32_t mask = x.dim() == 0 ? 0u : cpu::dim_bit(d);
  const DimVector sizes = reduced_sizes(x, mask, keepdim);
  ValuesIndices r{empty(sizes, x.options()), empty(sizes, x.options().dtype(kInt64))};
  dispatch_all(x.dtype(), name, [&]<class T>() {
    const auto args = std::make_tuple(x.data_ptr<T>(), strided_dims(x), x.dim() == 0 ? 0 : d,
                                      r.values.data_ptr<T>(), r.indices.data_ptr<std::int64_t>());
    if (is_max)
      std::apply(FRUGAL_KERNEL(x.device(), max_with_indices<T>), args);
    else
      std::apply(FRUGAL_KERNEL(x.device(), min_with_indices<T>), args);
  });
  if (autograd::needs_grad(x)) {
    autograd::record(r.values, name, {x},
                     [indices = r.indices, sizes = DimVector(x.sizes()), d,
                      keepdim = keepdim || x.dim() == 0](const Tensor& g, InputGrads& gi) {
                       gi[0] =
                           scatter_to_indices(g, indices, sizes, sizes.empty() ? 0 : d, keepdim);
                     });
  }
  return r;
}

Tensor arg_extreme(const Tensor& x, std::int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "argmax" : "argmin";
  const int d = wrap_dim(dim, x.dim(), name);
  const std::uint32_t mask = x.dim() == 0 ? 0u : cpu::dim_bit(d);
  Tensor out = empty(reduced_sizes(x, mask, keepdim), x.options().dtype(kInt64));
  dispatch_all(x.dtype(), name, [&]<class T>() {
    const auto args = std::make_tuple(x.data_ptr<T>(), strided_dims(x), x.dim() == 0 ? 0 : d,
                                      out.data_ptr<std::int64_t>());
    if (is_max)
      std::apply(FRUGAL_KERNEL(x.device(), argmax<T>), args);
    else
      std::apply(FRUGAL_KERNEL(x.device(), argmin<T>), args);
  });
  return out;
}

// Softmax runs on contiguous data seen as [outer, dim, inner].
struct SoftmaxShape {
  std::int64_t outer = 1, dim = 1, inner = 1;
  SoftmaxShape(const Tensor& x, int d) {
    for (int i = 0; i < x.dim(); ++i) {
      const std::int64_t s = x.sizes()[static_cast<std::size_t>(i)];
      if (i < d)
        outer *= s;
      else if (i == d)
        dim = s;
      else
        inner *= s;
    }
  }
};

Tensor softmax_impl(const Tensor& input, std::int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  const int d = wrap_dim(dim, input.dim(), name);
  // Integer inputs compute in float32, as in PyTorch.
  const Tensor x = (input.is_floating_point() ? input : input.to(kFloat32)).contiguous();
  const SoftmaxShape s(x, x.dim() == 0 ? 0 : d);
  Tensor out = empty(x.sizes(), x.options());
  dispatch_floating(x.dtype(), name, [&]<class T>() {
    const auto args = std::make_tuple(x.data_ptr<T>(), out.data_ptr<T>(), s.outer, s.dim, s.inner);
    if (log)
      std::apply(FRUGAL_KERNEL(x.device(), log_softmax<T>), args);
    else
      std::apply(FRUGAL_KERNEL(x.device(), softmax<T>), args);
  });
  if (autograd::needs_grad(input)) {
    // Both backwards need only the output: the input can be freed by its owner.
    autograd::record(
        out, name, {input}, [so = save(out, name), s, log, name](const Tensor& g, InputGrads& gi) {
          const Tensor& y = so.unpack();
          const Tensor gc = g.contiguous();
          Tensor grad = empty(y.sizes(), y.options());
          dispatch_floating(y.dtype(), name, [&]<class T>() {
            const auto args = std::make_tuple(y.data_ptr<T>(), gc.data_ptr<T>(), grad.data_ptr<T>(),
                                              s.outer, s.dim, s.inner);
            if (log)
              std::apply(FRUGAL_KERNEL(y.device(), log_softmax_backward<T>), args);
            else
              std::apply(FRUGAL_KERNEL(y.device(), softmax_backward<T>), args);
          });
          gi[0] = std::move(grad);
        });
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kSum, x.device(), [](const Tensor& a) { return sum(a); }, x);
  return sum_impl(x, reduce_mask(x, {}, "sum"), false);
}
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kSum, x.device(), [&](const Tensor& a) { return sum(a, dims, keepdim); }, x);
  return sum_impl(x, reduce_mask(x, dims, "sum"), keepdim);
}
Tensor mean(const Tensor& x) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kMean, x.device(), [](const Tensor& a) { return mean(a); }, x);
  return mean_impl(x, reduce_mask(x, {}, "mean"), false);
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kMean, x.device(), [&](const Tensor& a) { return mean(a, dims, keepdim); },
        x);
  return mean_impl(x, reduce_mask(x, dims, "mean"), keepdim);
}

Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kVar, x.device(),
        [&](const Tensor& a) { return var(a, dims, unbiased, keepdim); }, x);
  const std::uint32_t mask = reduce_mask(x, dims, "var");
  const double correction = unbiased ? 1.0 : 0.0;
  Tensor out = empty(reduced_sizes(x, mask, keepdim), x.options());
  dispatch_floating(x.dtype(), "var", [&]<class T>() {
    FRUGAL_KERNEL(x.device(), var<T>)
    (x.data_ptr<T>(), strided_dims(x), mask, correction, out.data_ptr<T>());
  });
  if (autograd::needs_grad(x)) {
    // d var / dx = 2 (x - mean) / (n - correction)
    autograd::record(out, "var", {x},
                     [u = Unreduce{DimVector(x.sizes()), mask, keepdim}, sx = save(x, "var"), mask,
                      denom = static_cast<double>(reduced_count(x, mask)) - correction](
                         const Tensor& g, InputGrads& gi) {
                       const Tensor& xv = sx.unpack();
                       const Tensor centred = sub(xv, mean_impl(xv, mask, true));
                       gi[0] = mul(centred, u(mul(g, 2.0 / denom)));
                     });
  }
  return out;
}

Tensor max(const Tensor& x) { return extreme_all(x, true); }
Tensor min(const Tensor& x) { return extreme_all(x, false); }
ValuesIndices max(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, true);
}
ValuesIndices min(const Tensor& x, std::int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, false);
}
Tensor argmax(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::int64_t dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, false);
}

Tensor softmax(const Tensor& x, std::int64_t dim) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kSoftmax, x.device(), [dim](const Tensor& a) { return softmax(a, dim); }, x);
  return softmax_impl(x, dim, false);
}
Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kLogSoftmax, x.device(),
        [dim](const Tensor& a) { return log_softmax(a, dim); }, x);
  return softmax_impl(x, dim, true);
}

}  // namespace frugal
