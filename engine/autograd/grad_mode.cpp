// The thread-local switches behind NoGradGuard and InferenceMode.
#include "engine/autograd/grad_mode.h"

namespace frugal {

namespace {
thread_local bool grad_enabled = true;
thread_local bool inference_enabled = false;
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

InferenceMode::InferenceMode(bool enabled)
    : previous_grad_(grad_enabled), previous_inference_(inference_enabled) {
  inference_enabled = enabled;
  grad_enabled = !enabled && previous_grad_;
}

InferenceMode::~InferenceMode() {
  grad_enabled = previous_grad_;
  inference_enabled = previous_inference_;
}

bool InferenceMode::is_enabled() { return inference_enabled; }

}  // namespace frugal
