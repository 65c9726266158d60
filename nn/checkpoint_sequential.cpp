// checkpoint_sequential and CheckpointedSequential: segment boundaries, one checkpoint() per
// segment with its modules' buffers preserved across the recompute.
#include "nn/checkpoint_sequential.h"

#include <algorithm>

#include "common/error.h"
#include "engine/autograd/checkpoint.h"
#include "engine/autograd/grad_mode.h"
#include "nn/stateless.h"

namespace frugal::nn {

namespace {

bool overwrites_input(const Module& module) {
  const auto* relu = dynamic_cast<const ReLU*>(&module);
  return relu && relu->inplace;
}

std::vector<std::shared_ptr<Module>> modules_of(const Sequential& seq) {
  std::vector<std::shared_ptr<Module>> modules;
  for (const auto& [name, module] : seq.named_children()) modules.push_back(module);
  return modules;
}

Tensor run(const std::vector<std::shared_ptr<Module>>& modules, std::size_t begin, std::size_t end,
           Tensor x) {
  for (std::size_t i = begin; i < end; ++i) x = modules[i]->forward(x);
  return x;
}

}  // namespace

std::vector<std::size_t> checkpoint_segment_starts(
    const std::vector<std::shared_ptr<Module>>& modules, int segments) {
  FRUGAL_CHECK(segments >= 1, "checkpoint_sequential: segments must be at least 1, got " +
                                  std::to_string(segments));
  const std::size_t n = modules.size();
  const std::size_t count =
      std::min<std::size_t>(static_cast<std::size_t>(segments), std::max<std::size_t>(n, 1));
  std::vector<std::size_t> starts{0};
  for (std::size_t s = 1; s < count; ++s) {
    std::size_t start = s * n / count;
    while (start > starts.back() && overwrites_input(*modules[start])) --start;
    if (start > starts.back()) starts.push_back(start);
  }
  return starts;
}

Tensor checkpoint_sequential(const Sequential& seq, int segments, const Tensor& input,
                             bool preserve_rng_state) {
  const std::vector<std::shared_ptr<Module>> modules = modules_of(seq);
  const std::vector<std::size_t> starts = checkpoint_segment_starts(modules, segments);
  if (!GradMode::is_enabled()) return run(modules, 0, modules.size(), input);

  Tensor x = input;
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
    const std::size_t begin = starts[s], end = starts[s + 1];
    std::vector<std::shared_ptr<Module>> segment(modules.begin() + begin, modules.begin() + end);
    autograd::CheckpointOptions options;
    options.preserve_rng_state = preserve_rng_state;
    for (const auto& module : segment)
      for (const Tensor& buffer : module->buffers()) options.preserve_state.push_back(buffer);
    x = autograd::checkpoint(
        [segment](const std::vector<Tensor>& in) { return run(segment, 0, segment.size(), in[0]); },
        {x}, std::move(options));
  }
  return run(modules, starts.back(), modules.size(), x);
}

CheckpointedSequential::CheckpointedSequential(const Sequential& model, int segments)
    : segments_(segments) {
  FRUGAL_CHECK(segments >= 1,
               "checkpoint_segments: segments must be at least 1, got " + std::to_string(segments));
  for (const auto& [name, module] : model.named_children()) push_back(module);
  train(model.is_training());
}

Tensor CheckpointedSequential::forward(const Tensor& input) {
  if (!is_training() || !GradMode::is_enabled()) return Sequential::forward(input);
  return checkpoint_sequential(*this, segments_, input);
}

std::string CheckpointedSequential::extra_repr() const {
  return "checkpoint_segments=" + std::to_string(segments_);
}

std::shared_ptr<CheckpointedSequential> checkpoint_segments(
    const std::shared_ptr<Sequential>& model, int segments) {
  FRUGAL_CHECK(model != nullptr, "checkpoint_segments: the model is null");
  return std::make_shared<CheckpointedSequential>(*model, segments);
}

}  // namespace frugal::nn
