// The backward pass. Nodes run in dependency order (of the ready ones, the most recently
// created first, as PyTorch does). Memory is released as early as correctness allows: a
// node's input gradient is freed as soon as the node has consumed it, and, unless
// retain_graph, the tensors it saved are freed right after it runs.
#include <queue>
#include <unordered_map>

#include "common/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/autocast_call.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/factory.h"

namespace frugal::autograd {

namespace {

struct ByNewestFirst {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

// How many edges from nodes reachable from `root` point at each node.
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{root};
  std::unordered_map<Node*, bool> seen{{root, true}};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->next_edges()) {
      Node* next = edge.node.get();
      if (!next) continue;
      ++deps[next];
      if (seen.emplace(next, true).second) stack.push_back(next);
    }
  }
  return deps;
}

}  // namespace

void run_backward(Tensor root, Tensor gradient, bool retain_graph) {
  FRUGAL_CHECK(root.defined(), "backward: called on an undefined tensor");
  FRUGAL_CHECK(root.requires_grad(),
               "backward: the tensor does not require grad and has no grad_fn (was it made "
               "under NoGradGuard, or from inputs that do not require grad?)");
  Tensor grad = std::move(gradient);
  if (!grad.defined()) {
    FRUGAL_CHECK(root.numel() == 1,
                 "backward: grad can be implicitly created only for "
                 "one-element outputs, but the output has shape " +
                     shape_string(root.sizes()) + "; pass a gradient");
    grad = ones_like(root);
  }
  FRUGAL_CHECK(grad.sizes() == root.sizes(),
               "backward: the gradient has shape " + shape_string(grad.sizes()) +
                   " but the output has shape " + shape_string(root.sizes()));

  NoGradGuard no_grad;  // backward formulas record nothing (no higher-order gradients)
  // Each backward formula runs in the dtypes its forward ran in, whatever autocast says now.
  autocast::SuspendGuard no_autocast;
  Edge root_edge = gradient_edge(root);
  root = Tensor();  // the graph holds what it needs; a caller that moved the root in frees it
  std::unordered_map<Node*, int> deps = count_dependencies(root_edge.node.get());
  std::unordered_map<Node*, Tensor> buffers;  // gradients waiting for their node
  std::priority_queue<Node*, std::vector<Node*>, ByNewestFirst> ready;
  buffers[root_edge.node.get()] = std::move(grad);
  ready.push(root_edge.node.get());

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    auto it = buffers.find(node);
    Tensor input_grad;
    if (it != buffers.end()) {
      input_grad = std::move(it->second);
      buffers.erase(it);
    }
    std::vector<Tensor> input_grads;
    if (input_grad.defined()) {
      input_grad = node->run_pre_hooks(std::move(input_grad));
      // Memory history: what the node allocates is its op's backward, in its module.
      const alloc::ScopedOpTag op_tag(
          alloc::history_recording() ? std::string(node->name()) + " backward" : std::string());
      const auto module_tag = alloc::ScopedModuleTag::resume(node->history_module);
      input_grads = node->apply(std::move(input_grad), retain_graph);
    }
    // input_grad was moved into apply and is gone: the node's gradient is freed here.
    const auto& edges = node->next_edges();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].node.get();
      if (!next) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& buffer = buffers[next];
        if (!buffer.defined())
          buffer = std::move(input_grads[i]);
        else
          buffer = add(buffer, input_grads[i]);  // out of place: either may alias a live tensor
        input_grads[i] = Tensor();
      }
      if (--deps[next] == 0) ready.push(next);
    }
  }
}

}  // namespace frugal::autograd
