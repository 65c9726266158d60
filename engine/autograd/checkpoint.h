// Activation checkpointing (torch.utils.checkpoint): run a segment of the forward without
// recording its graph, keep only its inputs, and recompute it in backward to get the
// activations back — trading one extra forward of the segment for its activation memory.
#pragma once

#include <functional>
#include <vector>

#include "engine/tensor.h"

namespace frugal::autograd {

using CheckpointFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

struct CheckpointOptions {
  // Put the default generator back to where it was before the first forward when
  // recomputing, so dropout draws the same masks and the recomputation is bit-identical.
  bool preserve_rng_state = true;
  // Tensors that `fn` updates as a side effect of running (batch norm's running_mean,
  // running_var, num_batches_tracked). Their values are snapshotted before the recompute and
  // written back after it, so the recompute does not move them a second time.
  std::vector<Tensor> preserve_state;
};

// Returns fn(inputs). With grad mode on, fn runs without recording history and the result
// gets one node that, in backward, re-runs fn with grad enabled on detached copies of the
// inputs (same data, same RNG state) and backpropagates the incoming gradient through that
// recomputed graph: parameters used inside fn receive their gradients there, and the inputs'
// gradients flow on to the rest of the graph. Memory held between forward and backward: the
// inputs (which the caller holds anyway) and the output, nothing inside fn.
//
// Rules, as in PyTorch: fn must be deterministic given its inputs and the RNG state, must not
// modify its inputs in place (detected through their version counters: a frugal::Error in
// backward), and returns one tensor (frugal's nodes have one output). The result records a
// node even when no input requires grad, because parameters inside fn may (PyTorch's
// reentrant checkpoint silently drops their gradients in that case). With grad mode off this
// is just fn(inputs).
Tensor checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                  CheckpointOptions options = {});

// True while a checkpoint is recomputing its segment in backward (for code that must act
// differently then, such as a layer that counts its calls).
bool is_recomputing();

}  // namespace frugal::autograd
