// checkpoint(): the forward under NoGradGuard, and one node whose backward recomputes the
// segment with grad enabled (same inputs, same RNG state, side-effect state put back) and
// runs a nested backward pass through the recomputed graph.
#include "engine/autograd/checkpoint.h"

#include <optional>
#include <string>
#include <utility>

#include "common/error.h"
#include "engine/autocast.h"
#include "engine/autograd/record.h"
#include "engine/generator.h"
#include "engine/ops/autocast_call.h"

namespace frugal::autograd {

namespace {

thread_local int recompute_depth = 0;

// Sets the default generator to a state for a scope and puts the current one back after,
// so the draws of the recompute do not shift the draws of the rest of the program.
class GeneratorStateGuard {
 public:
  GeneratorStateGuard(std::uint64_t seed, std::uint64_t offset)
      : saved_seed_(default_generator().seed()), saved_offset_(default_generator().offset()) {
    default_generator().set_state(seed, offset);
  }
  ~GeneratorStateGuard() { default_generator().set_state(saved_seed_, saved_offset_); }
  GeneratorStateGuard(const GeneratorStateGuard&) = delete;
  GeneratorStateGuard& operator=(const GeneratorStateGuard&) = delete;

 private:
  std::uint64_t saved_seed_, saved_offset_;
};

// Snapshots tensors (batch-norm buffers) and writes the snapshot back at the end of the
// scope, even when the recompute throws.
class StateRestorer {
 public:
  explicit StateRestorer(const std::vector<Tensor>& state) : state_(state) {
    NoGradGuard no_grad;
    snapshot_.reserve(state_.size());
    for (const Tensor& t : state_) snapshot_.push_back(t.defined() ? t.clone() : Tensor());
  }
  ~StateRestorer() {
    NoGradGuard no_grad;
    for (std::size_t i = 0; i < state_.size(); ++i)
      if (snapshot_[i].defined()) state_[i].copy_(snapshot_[i]);
  }
  StateRestorer(const StateRestorer&) = delete;
  StateRestorer& operator=(const StateRestorer&) = delete;

 private:
  std::vector<Tensor> state_;  // handles sharing the live tensors' storage
  std::vector<Tensor> snapshot_;
};

// The autocast state of both device types, captured at the forward and put back for the
// recompute (backward itself runs with autocast suspended): a forward that ran its
// convolutions in bfloat16 is recomputed in bfloat16.
struct AutocastState {
  bool cpu_on = autocast::should_apply(Device(kCPU));
  ScalarType cpu_dtype = autocast::get_dtype(kCPU);
  bool cuda_on = autocast::should_apply(Device(kCUDA));
  ScalarType cuda_dtype = autocast::get_dtype(kCUDA);
};

class AutocastRestorer {
 public:
  explicit AutocastRestorer(const AutocastState& s)
      : resume_(false), cpu_(kCPU, s.cpu_dtype, s.cpu_on), cuda_(kCUDA, s.cuda_dtype, s.cuda_on) {}

 private:
  autocast::SuspendGuard resume_;
  AutocastGuard cpu_, cuda_;
};

struct RecomputeScope {
  RecomputeScope() { ++recompute_depth; }
  ~RecomputeScope() { --recompute_depth; }
};

}  // namespace

bool is_recomputing() { return recompute_depth > 0; }

Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                  CheckpointOptions options) {
  FRUGAL_CHECK(static_cast<bool>(fn), "checkpoint: the function is empty");
  if (!GradMode::is_enabled()) return fn(inputs);

  const std::uint64_t seed = default_generator().seed();
  const std::uint64_t offset = default_generator().offset();
  const AutocastState autocast_state;
  // Saved before fn runs, so that fn modifying an input in place shows in its version.
  std::vector<Edge> edges;
  std::vector<SavedTensor> saved;
  edges.reserve(inputs.size());
  saved.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    edges.push_back(gradient_edge(input));
    saved.push_back(save(input, "checkpoint"));
  }
  Tensor output;
  {
    NoGradGuard no_grad;
    output = fn(inputs);
  }
  FRUGAL_CHECK(output.defined(), "checkpoint: the function returned an undefined tensor");
  // A fresh handle: the node must not land on an input's impl when fn returns it unchanged.
  output = output.detach();

  BackwardFn backward = [fn, saved = std::move(saved), seed, offset, autocast_state,
                         options = std::move(options)](const Tensor& grad, InputGrads& grads) {
    // Leaves over the saved data: the recomputed graph ends at them, and their .grad is what
    // flows on to the inputs' own history.
    std::vector<Tensor> leaves;
    leaves.reserve(saved.size());
    for (std::size_t i = 0; i < saved.size(); ++i) {
      Tensor leaf;
      if (saved[i].defined()) leaf = saved[i].unpack().detach();
      if (leaf.defined() && grads.needs(i)) leaf.requires_grad_(true);
      leaves.push_back(std::move(leaf));
    }
    Tensor recomputed;
    {
      RecomputeScope scope;
      StateRestorer restore_state(options.preserve_state);
      std::optional<GeneratorStateGuard> rng;
      if (options.preserve_rng_state) rng.emplace(seed, offset);
      AutocastRestorer autocast_as_in_forward(autocast_state);
      AutoGradMode enable_grad(true);  // backward runs under NoGradGuard
      recomputed = fn(leaves);
    }
    FRUGAL_CHECK(recomputed.defined() && recomputed.sizes() == grad.sizes(),
                 "checkpoint: the recomputed output has shape " +
                     (recomputed.defined() ? shape_string(recomputed.sizes()) : std::string("(undefined)")) +
                     " but the forward produced " + shape_string(grad.sizes()) +
                     "; the checkpointed function must be deterministic");
    // Nothing inside the segment needs a gradient (no parameters, no input that wants one).
    if (!recomputed.requires_grad()) return;
    run_backward(recomputed, grad, /*retain_graph=*/false);
    recomputed = Tensor();
    for (std::size_t i = 0; i < leaves.size(); ++i)
      if (grads.needs(i) && leaves[i].defined()) grads[i] = leaves[i].grad();
  };
  output.impl()->ensure_autograd_meta().grad_fn =
      std::make_shared<FunctionNode>("checkpoint", std::move(edges), std::move(backward));
  return output;
}

}  // namespace frugal::autograd
