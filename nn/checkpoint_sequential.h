// Activation checkpointing for Sequential models (torch.utils.checkpoint.checkpoint_sequential):
// the layers split into segments, each run without keeping its activations and recomputed
// in backward; and a Sequential that trains that way, for frugal-train --checkpoint-activations.
#pragma once

#include <memory>
#include <vector>

#include "nn/sequential.h"

namespace frugal::nn {

// Where the segments of `modules` start: `segments` runs of about equal length, except that
// no segment starts at a module that overwrites its input (an in-place ReLU would clobber the
// input the checkpoint keeps), so such a module joins the segment before it. Always starts
// with 0; fewer starts than asked when there are fewer modules.
std::vector<std::size_t> checkpoint_segment_starts(
    const std::vector<std::shared_ptr<Module>>& modules, int segments);

// Runs `seq` on `input` as `segments` segments; every segment but the last is checkpointed
// (the last one's activations are needed by backward at once, as in PyTorch). Each segment's
// buffers (batch-norm running statistics) are put back after its recompute, so training
// statistics move once per step exactly as without checkpointing. With grad mode off this is
// seq.forward(input). segments must be >= 1.
Tensor checkpoint_sequential(const Sequential& seq, int segments, const Tensor& input,
                             bool preserve_rng_state = true);

// A Sequential over the same modules (same names, same parameters: its state_dict is the
// original's) whose forward, when training with grad mode on, is checkpoint_sequential;
// in eval or under NoGradGuard it is the plain forward.
class CheckpointedSequential : public Sequential {
 public:
  CheckpointedSequential(const Sequential& model, int segments);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int segments() const { return segments_; }

 private:
  int segments_;
};

// The switch behind --checkpoint-activations: `model = nn::checkpoint_segments(model, k);`
// The returned model shares the original's modules (no copy). A frugal::Error when segments
// is below 1.
std::shared_ptr<CheckpointedSequential> checkpoint_segments(
    const std::shared_ptr<Sequential>& model, int segments);

}  // namespace frugal::nn
