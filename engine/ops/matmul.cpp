// Matrix products and their backward. Every product ends in one GEMM call (batched for bmm);
// a transposed view is read through the GEMM's transpose flag, so backward formulas like
// grad_a = g b^T cost no copy of b.
#include "engine/ops/matmul.h"

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/dispatch.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/copy.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"
#include "engine/ops/reduce.h"

namespace frugal {

using autograd::InputGrads;
using autograd::save;

namespace {

// A matrix as the GEMM reads it: rows x cols with unit stride along one of them.
struct GemmOperand {
  Tensor storage;  // keeps the data alive (a contiguous copy when the strides did not fit)
  bool trans = false;
  std::int64_t ld = 1;
  std::int64_t batch_stride = 0;
};

// `t` is [rows, cols] (or [B, rows, cols] with `batched`).
GemmOperand gemm_operand(const Tensor& t, bool batched) {
  const std::size_t r = batched ? 1 : 0, c = r + 1;
  const std::int64_t rows = t.sizes()[r], cols = t.sizes()[c];
  const std::int64_t s0 = t.strides()[r], s1 = t.strides()[c];
  GemmOperand op;
  op.batch_stride = batched ? (t.sizes()[0] == 1 ? 0 : t.strides()[0]) : 0;
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= cols)) {
    op.storage = t;
    op.ld = rows == 1 ? std::max<std::int64_t>(cols, 1) : s0;
  } else if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= rows)) {
    op.storage = t;
    op.trans = true;
    op.ld = cols == 1 ? std::max<std::int64_t>(rows, 1) : s1;
  } else {
    op.storage = t.contiguous();
    op.ld = std::max<std::int64_t>(cols, 1);
    op.batch_stride = batched ? rows * cols : 0;
  }
  if (op.ld < 1) op.ld = 1;
  return op;
}

void check_matrix_dtypes(const Tensor& a, const Tensor& b, const char* op) {
  detail::check_same_device(a, b, op);
  FRUGAL_CHECK(a.dtype() == b.dtype(), std::string(op) +
                                           ": expected both operands to have one "
                                           "dtype, got " +
                                           dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

// out [B?, n, p] = a [B?, n, m] x b [B?, m, p] (or += into out with accumulate), no autograd.
void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b, bool batched, double beta,
               const char* op) {
  const GemmOperand ga = gemm_operand(a, batched), gb = gemm_operand(b, batched);
  const std::size_t r = batched ? 1 : 0;
  const std::int64_t n = a.sizes()[r], m = a.sizes()[r + 1], p = b.sizes()[r + 1];
  const std::int64_t batch = batched ? out.sizes()[0] : 1;
  dispatch_floating(a.dtype(), op, [&]<class T>() {
    const T* ap = static_cast<const T*>(ga.storage.data_ptr());
    const T* bp = static_cast<const T*>(gb.storage.data_ptr());
    T* cp = out.data_ptr<T>();
    const std::int64_t ldc = std::max<std::int64_t>(p, 1);
    if (batched) FRUGAL_KERNEL(out.device(), gemm_batched<T>)
    (ga.trans, gb.trans, batch, n, p, m, T(1.0f), ap, ga.ld, ga.batch_stride, bp, gb.ld,
     gb.batch_stride, T(static_cast<float>(beta)), cp, ldc, n * p);
    else FRUGAL_KERNEL(out.device(), gemm<T>)(ga.trans, gb.trans, n, p, m, T(1.0f), ap, ga.ld, bp,
                                              gb.ld, T(static_cast<float>(beta)), cp, ldc);
  });
}

Tensor mm_no_grad(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), b.size(1)}, a.options());
  gemm_into(out, a, b, false, 0.0, "mm");
  return out;
}

Tensor bmm_no_grad(const Tensor& a, const Tensor& b) {
  Tensor out = empty({std::max(a.size(0), b.size(0)), a.size(1), b.size(2)}, a.options());
  gemm_into(out, a, b, true, 0.0, "bmm");
  return out;
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  if (autocast::should_apply(a.device()))
    return autocast::call(
        autocast::Op::kMm, a.device(), [&](auto&&... a) { return mm(a...); }, a, b);
  FRUGAL_CHECK(a.dim() == 2 && b.dim() == 2, "mm: expected two matrices, got shapes " +
                                                 shape_string(a.sizes()) + " and " +
                                                 shape_string(b.sizes()));
  FRUGAL_CHECK(a.size(1) == b.size(0), "mm: shapes " + shape_string(a.sizes()) + " and " +
                                           shape_string(b.sizes()) + " cannot be multiplied (" +
                                           std::to_string(a.size(1)) +
                                           " != " + std::to_string(b.size(0)) + ")");
  check_matrix_dtypes(a, b, "mm");
  Tensor out = mm_no_grad(a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(out, "mm", {a, b},
                     [sa = save(autograd::requires_grad(b) ? a : Tensor(), "mm"),
                      sb = save(autograd::requires_grad(a) ? b : Tensor(), "mm")](const Tensor& g,
                                                                                  InputGrads& gi) {
                       if (gi.needs(0)) gi[0] = mm_no_grad(g, sb.unpack().t());
                       if (gi.needs(1)) gi[1] = mm_no_grad(sa.unpack().t(), g);
                     });
  }
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (autocast::should_apply(a.device()))
    return autocast::call(
        autocast::Op::kBmm, a.device(), [&](auto&&... a) { return bmm(a...); }, a, b);
  FRUGAL_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected two 3-d tensors, got shapes " +
                                                 shape_string(a.sizes()) + " and " +
                                                 shape_string(b.sizes()));
  FRUGAL_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1),
               "bmm: shapes " + shape_string(a.sizes()) + " and " + shape_string(b.sizes()) +
                   " cannot be multiplied");
  check_matrix_dtypes(a, b, "bmm");
  Tensor out = bmm_no_grad(a, b);
  if (autograd::needs_grad(a, b)) {
    autograd::record(out, "bmm", {a, b},
                     [sa = save(autograd::requires_grad(b) ? a : Tensor(), "bmm"),
                      sb = save(autograd::requires_grad(a) ? b : Tensor(), "bmm")](const Tensor& g,
                                                                                   InputGrads& gi) {
                       if (gi.needs(0)) gi[0] = bmm_no_grad(g, sb.unpack().transpose(1, 2));
                       if (gi.needs(1)) gi[1] = bmm_no_grad(sa.unpack().transpose(1, 2), g);
                     });
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const std::int64_t da = a.dim(), db = b.dim();
  FRUGAL_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least one dimension, got " +
                                       shape_string(a.sizes()) + " and " + shape_string(b.sizes()));
  if (da == 1 && db == 1) {
    FRUGAL_CHECK(a.size(0) == b.size(0), "matmul: vectors of sizes " + std::to_string(a.size(0)) +
                                             " and " + std::to_string(b.size(0)) + " differ");
    return mm(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  }
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (db == 1) return matmul(a, b.unsqueeze(1)).squeeze(-1);
  if (da == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  const std::int64_t n = a.size(-2), m = a.size(-1), mb = b.size(-2), p = b.size(-1);
  FRUGAL_CHECK(m == mb, "matmul: shapes " + shape_string(a.sizes()) + " and " +
                            shape_string(b.sizes()) + " cannot be multiplied (" +
                            std::to_string(m) + " != " + std::to_string(mb) + ")");
  if (db == 2) {
    // [..., n, m] x [m, p]: one GEMM over all rows of a (a weight shared by the batch).
    DimVector out_sizes(a.sizes());
    out_sizes.back() = p;
    return mm(a.reshape({-1, m}), b).view(out_sizes);
  }
  // Broadcast batch dims; expanded (stride-0) batches stay views thanks to view's rules.
  const IntArrayRef batch_a(a.sizes().data(), static_cast<std::size_t>(da - 2));
  const IntArrayRef batch_b(b.sizes().data(), static_cast<std::size_t>(db - 2));
  DimVector batch = broadcast_shapes(batch_a, batch_b, "matmul");
  DimVector sa = batch, sb = batch, out_sizes = batch;
  sa.push_back(n);
  sa.push_back(m);
  sb.push_back(m);
  sb.push_back(p);
  out_sizes.push_back(n);
  out_sizes.push_back(p);
  const Tensor a3 = a.expand(sa).reshape({-1, n, m});
  const Tensor b3 = b.expand(sb).reshape({-1, m, p});
  return bmm(a3, b3).view(out_sizes);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (autocast::should_apply(x.device()))
    return autocast::call(
        autocast::Op::kLinear, x.device(), [&](auto&&... a) { return linear(a...); }, x, weight,
        bias);
  FRUGAL_CHECK(weight.dim() == 2, "linear: the weight must be [out_features, in_features], got " +
                                      shape_string(weight.sizes()));
  FRUGAL_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1),
               "linear: input of shape " + shape_string(x.sizes()) + " does not match weight " +
                   shape_string(weight.sizes()) + " (in_features " +
                   std::to_string(weight.size(1)) + ")");
  check_matrix_dtypes(x, weight, "linear");
  const std::int64_t out_features = weight.size(0);
  if (bias.defined()) {
    FRUGAL_CHECK(bias.dim() == 1 && bias.size(0) == out_features,
                 "linear: bias of shape " + shape_string(bias.sizes()) + " does not match " +
                     std::to_string(out_features) + " out_features");
    check_matrix_dtypes(x, bias, "linear");
  }
  const Tensor x2 = x.reshape({-1, weight.size(1)});
  Tensor out = empty({x2.size(0), out_features}, x.options());
  double beta = 0.0;
  if (bias.defined()) {  // out = bias per row, then the GEMM accumulates onto it
    copy_data(out, bias);
    beta = 1.0;
  }
  gemm_into(out, x2, weight.t(), false, beta, "linear");
  DimVector out_sizes(x.sizes());
  out_sizes.back() = out_features;
  if (x.dim() != 2) out = out.view(out_sizes);
  if (autograd::needs_grad(x, weight, bias)) {
    autograd::record(
        out, "linear", {x, weight, bias},
        [sx = save(autograd::requires_grad(weight) ? x : Tensor(), "linear"),
         sw = save(autograd::requires_grad(x) ? weight : Tensor(), "linear"),
         x_sizes = DimVector(x.sizes()), in = weight.size(1)](const Tensor& g, InputGrads& gi) {
          const Tensor g2 = g.reshape({-1, g.size(-1)});
          if (gi.needs(0)) gi[0] = mm_no_grad(g2, sw.unpack()).view(x_sizes);
          if (gi.needs(1)) gi[1] = mm_no_grad(g2.t(), sx.unpack().reshape({-1, in}));
          if (gi.needs(2)) gi[2] = sum(g2, {0});
        });
  }
  return out;
}

}  // namespace frugal
