// Linking op outputs into the graph: edges to inputs' nodes, new nodes, in-place rebasing.
#include "engine/autograd/record.h"

#include "common/error.h"

namespace frugal::autograd {

Edge gradient_edge(const Tensor& t) {
  if (!requires_grad(t)) return {};
  AutogradMeta& meta = t.impl()->ensure_autograd_meta();
  if (meta.grad_fn) return {meta.grad_fn};
  std::shared_ptr<Node> accumulator = meta.grad_accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(Tensor(t.impl_ptr()));
    meta.grad_accumulator = accumulator;
  }
  return {std::move(accumulator)};
}

void record(Tensor& result, const char* name, std::initializer_list<Tensor> inputs,
            BackwardFn backward) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& input : inputs) edges.push_back(gradient_edge(input));
  result.impl()->ensure_autograd_meta().grad_fn =
      std::make_shared<FunctionNode>(name, std::move(edges), std::move(backward));
  // The forward allocated the output before it knew it would record: name it now.
  if (result.impl()->storage()) result.impl()->storage()->name_history_op(name);
}

void check_inplace(const Tensor& self, const char* name, bool records_history) {
  if (!GradMode::is_enabled()) return;
  const AutogradMeta* meta = self.impl()->autograd_meta();
  FRUGAL_CHECK(!(meta && meta->requires_grad && !meta->grad_fn),
               std::string(name) +
                   ": a leaf tensor that requires grad is being used in an in-place operation; "
                   "do it under NoGradGuard (as optimizers do) or on a clone()");
  FRUGAL_CHECK(!(records_history && self.impl()->is_view()),
               std::string(name) +
                   ": in-place operation on a view while recording autograd history; the tensor "
                   "it views would not see the change. Use the out-of-place op, or clone() the "
                   "view first");
}

void rebase(Tensor& self, const char* name, std::initializer_list<Tensor> other_inputs,
            BackwardFn backward) {
  std::vector<Edge> edges;
  edges.reserve(other_inputs.size() + 1);
  edges.push_back(gradient_edge(self));
  for (const Tensor& input : other_inputs) edges.push_back(gradient_edge(input));
  self.impl()->ensure_autograd_meta().grad_fn =
      std::make_shared<FunctionNode>(name, std::move(edges), std::move(backward));
}

}  // namespace frugal::autograd
