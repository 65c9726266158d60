// Autocast's thread-local state (per device type: on or off, and the dtype), the nesting that
// decides when the weight-cast cache is dropped, and the casts ops apply through their policy.
#include "engine/autocast.h"

#include <string>
#include <unordered_map>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/copy.h"
#include "engine/tensor.h"

namespace frugal {

namespace {

struct DeviceState {
  bool enabled = false;
  ScalarType dtype;
};

struct CachedCast {
  Tensor source;  // keeps the key's TensorImpl alive, so its address is not reused meanwhile
  Tensor cast;
};

struct ThreadState {
  DeviceState cpu{false, kBFloat16};
  DeviceState cuda{false, kFloat16};
  int nesting = 0;
  bool suspended = false;
  std::unordered_map<const TensorImpl*, CachedCast> cache;

  DeviceState& of(DeviceType d) { return d == kCUDA ? cuda : cpu; }
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

}  // namespace

AutocastGuard::AutocastGuard(DeviceType device, std::optional<ScalarType> dtype, bool enabled)
    : device_(device) {
  DeviceState& s = state().of(device);
  const ScalarType want = dtype.value_or(device == kCUDA ? kFloat16 : kBFloat16);
  FRUGAL_CHECK(want == kFloat16 || want == kBFloat16,
               std::string("AutocastGuard: the autocast dtype must be float16 or bfloat16, got ") +
                   dtype_name(want));
  previous_enabled_ = s.enabled;
  previous_dtype_ = s.dtype;
  s.enabled = enabled;
  s.dtype = want;
  ++state().nesting;
}

AutocastGuard::~AutocastGuard() {
  ThreadState& t = state();
  DeviceState& s = t.of(device_);
  s.enabled = previous_enabled_;
  s.dtype = previous_dtype_;
  // The casts belong to the outermost region: inner regions reuse them, and leaving the
  // outermost one gives their memory back.
  if (--t.nesting == 0) t.cache.clear();
}

namespace autocast {

bool is_enabled(DeviceType device) { return state().of(device).enabled; }
ScalarType get_dtype(DeviceType device) { return state().of(device).dtype; }
std::size_t cache_size() { return state().cache.size(); }
void clear_cache() { state().cache.clear(); }

bool should_apply(Device device) {
  const ThreadState& t = state();
  return !t.suspended && (device.is_cuda() ? t.cuda.enabled : t.cpu.enabled);
}

SuspendGuard::SuspendGuard(bool suspend) : previous_(state().suspended) {
  state().suspended = suspend;
}
SuspendGuard::~SuspendGuard() { state().suspended = previous_; }

namespace detail {

std::optional<ScalarType> target_dtype(CastPolicy policy, DeviceType device,
                                       std::optional<ScalarType> widest) {
  switch (policy) {
    case CastPolicy::kLowerPrecision:
      return state().of(device).dtype;
    case CastPolicy::kFloat32:
      return kFloat32;
    case CastPolicy::kPromote:
      return widest;
    case CastPolicy::kInputDtype:
      return std::nullopt;
  }
  return std::nullopt;
}

Tensor cast(const Tensor& t, CastPolicy policy, ScalarType to) {
  if (!t.is_floating_point() || t.dtype() == to) return t;
  // PyTorch's rules: lower precision never narrows float64, float32 never narrows anything.
  if (policy == CastPolicy::kLowerPrecision && t.dtype() == kFloat64) return t;
  if (policy == CastPolicy::kFloat32 && t.dtype() == kFloat64) return t;
  // A weight: cast once per outermost region. Only while grad mode is on, so that every cached
  // cast carries the history that leads its gradient back to the float32 weight.
  const bool cacheable = policy == CastPolicy::kLowerPrecision && t.dtype() == kFloat32 &&
                         t.is_leaf() && t.requires_grad() && GradMode::is_enabled();
  if (!cacheable) return to_dtype(t, to);
  auto& cache = state().cache;
  const auto it = cache.find(t.impl());
  if (it != cache.end() && it->second.cast.dtype() == to) return it->second.cast;
  Tensor cast = to_dtype(t, to);
  cache[t.impl()] = CachedCast{t, cast};
  return cast;
}

}  // namespace detail

}  // namespace autocast

}  // namespace frugal
