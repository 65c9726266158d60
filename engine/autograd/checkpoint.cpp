// checkpoint(): the forward under NoGradGuard, and one node whose backward recomputes the
// segment with grad enabled (same inputs, same RNG state, side-effect state put back) and
// runs a nested backward pass through the recomputed graph.
#include "engine/autograd/checkpoint.h"

#include <memory>
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

// The node of a checkpointed segment: what it needs to replay the forward, and a backward
// that replays it and runs a nested backward pass through the replayed graph. A Node of its
// own rather than a FunctionNode so that it can hand the incoming gradient and the replayed
// output to that pass by value, and they are freed as early as in a plain backward.
class CheckpointNode final : public Node {
 public:
  struct Replay {
    CheckpointFunction fn;
    std::vector<SavedTensor> inputs;
    std::uint64_t seed, offset;
    AutocastState autocast;
    CheckpointOptions options;
  };

  CheckpointNode(std::vector<Edge> edges, Replay replay)
      : Node(std::move(edges)), replay_(std::make_unique<Replay>(std::move(replay))) {}
  const char* name() const override { return "checkpoint"; }

  std::vector<Tensor> apply(Tensor grad, bool retain_graph) override {
    FRUGAL_CHECK(
        replay_ != nullptr,
        "trying to backward through a checkpoint a second time (it freed its inputs after "
        "the first backward); pass retain_graph=true to the first backward() to keep them");
    const Replay& r = *replay_;
    const auto needs = [&](std::size_t i) { return next_edges_[i].node != nullptr; };
    // Leaves over the saved data: the replayed graph ends at them, and their .grad is what
    // flows on to the inputs' own history.
    std::vector<Tensor> leaves;
    leaves.reserve(r.inputs.size());
    for (std::size_t i = 0; i < r.inputs.size(); ++i) {
      Tensor leaf;
      if (r.inputs[i].defined()) leaf = r.inputs[i].unpack().detach();
      if (leaf.defined() && needs(i)) leaf.requires_grad_(true);
      leaves.push_back(std::move(leaf));
    }
    Tensor recomputed;
    {
      RecomputeScope scope;
      StateRestorer restore_state(r.options.preserve_state);
      std::optional<GeneratorStateGuard> rng;
      if (r.options.preserve_rng_state) rng.emplace(r.seed, r.offset);
      AutocastRestorer autocast_as_in_forward(r.autocast);
      AutoGradMode enable_grad(true);  // backward runs under NoGradGuard
      recomputed = r.fn(leaves);
    }
    FRUGAL_CHECK(
        recomputed.defined() && recomputed.sizes() == grad.sizes(),
        "checkpoint: the recomputed output has shape " +
            (recomputed.defined() ? shape_string(recomputed.sizes()) : std::string("(undefined)")) +
            " but the forward produced " + shape_string(grad.sizes()) +
            "; the checkpointed function must be deterministic");
    std::vector<Tensor> grads(leaves.size());
    // Unless nothing inside the segment needs a gradient (no parameters, no input that wants one).
    if (recomputed.requires_grad()) {
      run_backward(std::move(recomputed), std::move(grad), /*retain_graph=*/false);
      for (std::size_t i = 0; i < leaves.size(); ++i)
        if (needs(i) && leaves[i].defined()) grads[i] = leaves[i].grad();
    }
    if (!retain_graph) replay_.reset();  // frees the saved inputs now
    return grads;
  }

 private:
  std::unique_ptr<Replay> replay_;
};

}  // namespace

bool is_recomputing() { return recompute_depth > 0; }

Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                  CheckpointOptions options) {
  FRUGAL_CHECK(static_cast<bool>(fn), "checkpoint: the function is empty");
  if (!GradMode::is_enabled()) return fn(inputs);

  CheckpointNode::Replay replay{fn,
                                {},
                                default_generator().seed(),
                                default_generator().offset(),
                                AutocastState(),
                                std::move(options)};
  // Saved before fn runs, so that fn modifying an input in place shows in its version.
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  replay.inputs.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    edges.push_back(gradient_edge(input));
    replay.inputs.push_back(save(input, "checkpoint"));
  }
  Tensor output;
  {
    NoGradGuard no_grad;
    output = fn(inputs);
  }
  FRUGAL_CHECK(output.defined(), "checkpoint: the function returned an undefined tensor");
  // A fresh handle: the node must not land on an input's impl when fn returns it unchanged.
  output = output.detach();
  output.impl()->ensure_autograd_meta().grad_fn =
      std::make_shared<CheckpointNode>(std::move(edges), std::move(replay));
  return output;
}

}  // namespace frugal::autograd
