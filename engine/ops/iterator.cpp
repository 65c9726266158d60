// Broadcasting and dimension merging for elementwise loops.
#include "engine/ops/iterator.h"

#include "common/error.h"
#include "engine/dispatch.h"
#include "engine/ops/factory.h"
#include "engine/ops/kernels.h"

namespace frugal {

LoopBuilder::LoopBuilder(const Tensor& out) : device_(out.device()) {
  loop_.ndim = static_cast<int>(out.dim());
  loop_.nops = 1;
  loop_.data[0] = static_cast<char*>(out.data_ptr());
  const auto es = static_cast<std::int64_t>(out.element_size());
  for (int d = 0; d < loop_.ndim; ++d) {
    loop_.sizes[d] = out.sizes()[d];
    loop_.strides[0][d] = out.strides()[d] * es;
  }
}

LoopBuilder& LoopBuilder::input(const Tensor& t) {
  const int k = loop_.nops++;
  const int lead = loop_.ndim - static_cast<int>(t.dim());
  FRUGAL_CHECK(lead >= 0, "internal: loop input has more dims than the output");
  loop_.data[k] = static_cast<char*>(t.data_ptr());
  const auto es = static_cast<std::int64_t>(t.element_size());
  for (int d = 0; d < loop_.ndim; ++d) {
    if (d < lead) {
      loop_.strides[k][d] = 0;
      continue;
    }
    const std::int64_t size = t.sizes()[d - lead];
    FRUGAL_CHECK(size == loop_.sizes[d] || size == 1,
                 "internal: loop input does not broadcast to the output");
    loop_.strides[k][d] = size == 1 ? 0 : t.strides()[d - lead] * es;
  }
  return *this;
}

LoopBuilder& LoopBuilder::scalar(const void* value, ScalarType dtype) {
  if (!device_.is_cpu()) {
    FRUGAL_CHECK(!device_scalar_.defined(), "internal: one device scalar per loop");
    device_scalar_ = empty({}, TensorOptions(dtype).device(device_));
    const auto fill_loop = LoopBuilder(device_scalar_).build();
    dispatch_all(dtype, "scalar operand", [&]<class T>() {
      FRUGAL_KERNEL(device_, fill<T>)(fill_loop, *static_cast<const T*>(value));
    });
    return input(device_scalar_);
  }
  const int k = loop_.nops++;
  loop_.data[k] = static_cast<char*>(const_cast<void*>(value));
  for (int d = 0; d < loop_.ndim; ++d) loop_.strides[k][d] = 0;
  return *this;
}

kernels::cpu::StridedLoop LoopBuilder::build() const {
  kernels::cpu::StridedLoop out;
  out.nops = loop_.nops;
  for (int k = 0; k < loop_.nops; ++k) out.data[k] = loop_.data[k];
  if (loop_.numel() == 0) {  // nothing to do; keep one empty dim so numel() is 0
    out.ndim = 1;
    out.sizes[0] = 0;
    return out;
  }
  // Walk from the innermost dim outwards, merging dim d into the current outer-most kept
  // dim when every operand steps through them as one run.
  int kept = 0;  // dims kept so far, stored innermost-first in reverse below
  std::int64_t sizes[kernels::cpu::kMaxLoopDims];
  std::int64_t strides[kernels::cpu::kMaxLoopOperands][kernels::cpu::kMaxLoopDims];
  for (int d = loop_.ndim - 1; d >= 0; --d) {
    if (loop_.sizes[d] == 1) continue;
    bool merge = kept > 0;
    for (int k = 0; merge && k < loop_.nops; ++k)
      merge = loop_.strides[k][d] == strides[k][kept - 1] * sizes[kept - 1];
    if (merge) {
      sizes[kept - 1] *= loop_.sizes[d];
      continue;
    }
    sizes[kept] = loop_.sizes[d];
    for (int k = 0; k < loop_.nops; ++k) strides[k][kept] = loop_.strides[k][d];
    ++kept;
  }
  out.ndim = kept;  // 0 when every dim has size 1: a single element
  for (int i = 0; i < kept; ++i) {
    out.sizes[i] = sizes[kept - 1 - i];
    for (int k = 0; k < loop_.nops; ++k) out.strides[k][i] = strides[k][kept - 1 - i];
  }
  return out;
}

}  // namespace frugal
