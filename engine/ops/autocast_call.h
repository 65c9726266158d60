// How an op front-end applies its autocast row, before anything else it does:
//   if (autocast::should_apply(x.device()))
//     return autocast::call(autocast::Op::kLinear, x.device(),
//                           [](auto&&... a) { return linear(a...); }, x, weight, bias);
// call() casts the tensor arguments as the op's policy says, then runs the op again with
// autocast suspended, so the op (and any op it calls) runs once, on the cast inputs.
#pragma once

#include <optional>
#include <utility>

#include "engine/autocast.h"
#include "engine/autocast_policy.h"
#include "engine/tensor.h"

namespace frugal::autocast {

// Whether autocast is on for ops on `device` on this thread and not suspended by an op that is
// already applying it (or by the backward pass).
bool should_apply(Device device);

// Suspends autocast on this thread while it lives (inside an op applying its row; backward).
// With suspend=false it lifts a suspension instead: a checkpoint recomputing its forward
// inside backward runs under the autocast state its forward had.
class SuspendGuard {
 public:
  explicit SuspendGuard(bool suspend = true);
  ~SuspendGuard();
  SuspendGuard(const SuspendGuard&) = delete;
  SuspendGuard& operator=(const SuspendGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {

// The dtype an op's floating inputs are cast to under `policy` on `device`, given the widest
// floating input type (for kPromote); nullopt: leave them as they are.
std::optional<ScalarType> target_dtype(CastPolicy policy, DeviceType device,
                                       std::optional<ScalarType> widest);
// `t` cast for `policy` towards `to`: float64 is never narrowed, and integer tensors are not
// touched. A float32 leaf that requires grad goes through the weight-cast cache.
Tensor cast(const Tensor& t, CastPolicy policy, ScalarType to);

inline void widen(std::optional<ScalarType>& widest, const Tensor& t) {
  if (!t.defined() || !t.is_floating_point()) return;
  widest = widest ? promote_types(*widest, t.dtype()) : t.dtype();
}
template <class A>
void widen(std::optional<ScalarType>&, const A&) {}

inline Tensor cast_arg(const Tensor& t, CastPolicy policy, ScalarType to) {
  return t.defined() ? cast(t, policy, to) : t;
}
template <class A>
A&& cast_arg(A&& a, CastPolicy, ScalarType) {
  return std::forward<A>(a);
}

}  // namespace detail

template <class F, class... Args>
auto call(Op op, Device device, F&& f, Args&&... args) {
  const CastPolicy p = policy(op);
  std::optional<ScalarType> widest;
  (detail::widen(widest, args), ...);
  SuspendGuard inner;
  const std::optional<ScalarType> to = detail::target_dtype(p, device.type(), widest);
  if (!to) return f(std::forward<Args>(args)...);
  return f(detail::cast_arg(std::forward<Args>(args), p, *to)...);
}

}  // namespace frugal::autocast
