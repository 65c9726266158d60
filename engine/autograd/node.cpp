// Nodes: creation order, hooks, the backward of FunctionNode and AccumulateGrad, and a
// destructor that frees long chains of nodes without deep recursion.
#include "engine/autograd/node.h"

#include <algorithm>

#include "common/error.h"
#include "engine/ops/copy.h"

namespace frugal::autograd {

namespace {
thread_local std::uint64_t next_sequence_nr = 0;
thread_local unsigned next_hook_handle = 1;
// While a node is being destroyed, the nodes it owned alone wait here instead of being
// destroyed from inside its destructor (a 100,000-op chain would overflow the stack).
thread_local std::vector<std::shared_ptr<Node>>* pending_deletes = nullptr;
}  // namespace

Node::Node(std::vector<Edge> next_edges)
    : next_edges_(std::move(next_edges)), sequence_nr_(next_sequence_nr++) {}

Node::~Node() { release_edges_iteratively(); }

void Node::release_edges_iteratively() {
  if (pending_deletes) {
    for (auto& e : next_edges_)
      if (e.node && e.node.use_count() == 1) pending_deletes->push_back(std::move(e.node));
    return;
  }
  const bool owns_any = std::any_of(next_edges_.begin(), next_edges_.end(), [](const Edge& e) {
    return e.node && e.node.use_count() == 1;
  });
  if (!owns_any) return;  // the edges just drop a reference
  std::vector<std::shared_ptr<Node>> queue;
  pending_deletes = &queue;
  for (auto& e : next_edges_)
    if (e.node && e.node.use_count() == 1) queue.push_back(std::move(e.node));
  while (!queue.empty()) {
    std::shared_ptr<Node> node = std::move(queue.back());
    queue.pop_back();
    node.reset();  // its own edges join the queue
  }
  pending_deletes = nullptr;
}

unsigned Node::add_pre_hook(TensorHook hook) {
  const unsigned handle = next_hook_handle++;
  pre_hooks_.emplace_back(handle, std::move(hook));
  return handle;
}

void Node::remove_pre_hook(unsigned handle) {
  std::erase_if(pre_hooks_, [handle](const auto& h) { return h.first == handle; });
}

Tensor Node::run_pre_hooks(Tensor grad) const {
  for (const auto& [handle, hook] : pre_hooks_) {
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

std::vector<Tensor> FunctionNode::apply(Tensor grad, bool retain_graph) {
  FRUGAL_CHECK(backward_,
               std::string("trying to backward through the graph a second time (the node of ") +
                   name_ +
                   " already freed its saved tensors after the first backward); pass "
                   "retain_graph=true to the first backward() to keep them");
  InputGrads grads(next_edges_);
  backward_(grad, grads);
  if (!retain_graph) backward_ = nullptr;  // frees the saved tensors now
  return grads.take();
}

std::vector<Tensor> AccumulateGrad::apply(Tensor grad, bool) {
  AutogradMeta& meta = variable_.impl()->ensure_autograd_meta();
  for (const auto& [handle, hook] : meta.hooks) {
    Tensor replaced = hook(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  if (grad.sizes() != variable_.sizes() || grad.dtype() != variable_.dtype())
    grad = grad.to(variable_.dtype()).reshape(variable_.sizes()).contiguous();
  if (!meta.grad.defined()) {
    // Steal the incoming buffer when nothing else can see it; otherwise copy it, so that
    // a later in-place accumulation never writes into someone else's tensor.
    const bool exclusive =
        grad.use_count() == 1 && grad.impl()->storage().use_count() == 1 && grad.is_contiguous();
    meta.grad = exclusive ? std::move(grad) : grad.clone();
  } else {
    meta.grad.add_(grad);
  }
  return {};
}

}  // namespace frugal::autograd
