// The autograd graph. Each op that records history makes one Node: it knows the nodes of
// its inputs (edges) and how to turn the gradient of its output into gradients of its
// inputs. Leaves end in AccumulateGrad, which adds into their .grad(). Nodes have exactly one
// output, which keeps the engine and every backward formula simple.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "allocator/history.h"
#include "engine/tensor.h"

namespace frugal::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: that input needs no gradient
};

using TensorHook = std::function<Tensor(const Tensor&)>;

class Node {
 public:
  explicit Node(std::vector<Edge> next_edges);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual const char* name() const = 0;
  // Gradients for each input (one per edge; undefined where none flows), given the
  // gradient of this node's output. Unless retain_graph, the node frees what it saved.
  virtual std::vector<Tensor> apply(Tensor grad, bool retain_graph) = 0;

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  // Creation order: the engine runs later nodes first, as PyTorch does.
  std::uint64_t sequence_nr() const { return sequence_nr_; }
  // The module that recorded the node (memory history): backward allocates in its name.
  const alloc::HistoryTag history_module = alloc::current_history_context.module;

  // Hooks on the gradient of this node's output (tensor hooks of non-leaf tensors).
  unsigned add_pre_hook(TensorHook hook);
  void remove_pre_hook(unsigned handle);
  Tensor run_pre_hooks(Tensor grad) const;

 protected:
  std::vector<Edge> next_edges_;

 private:
  void release_edges_iteratively();
  std::uint64_t sequence_nr_;
  std::vector<std::pair<unsigned, TensorHook>> pre_hooks_;
};

// Where a backward closure writes the gradients of an op's inputs.
class InputGrads {
 public:
  explicit InputGrads(const std::vector<Edge>& edges) : edges_(edges), grads_(edges.size()) {}
  // Whether input i wants a gradient; skip computing it otherwise.
  bool needs(std::size_t i) const { return edges_[i].node != nullptr; }
  Tensor& operator[](std::size_t i) { return grads_[i]; }
  std::vector<Tensor> take() { return std::move(grads_); }

 private:
  const std::vector<Edge>& edges_;
  std::vector<Tensor> grads_;
};

using BackwardFn = std::function<void(const Tensor& grad, InputGrads& grads)>;

// The node of every op: a name and the backward closure written beside the op's forward.
// The closure owns the tensors the op saved, so freeing it frees them.
class FunctionNode final : public Node {
 public:
  FunctionNode(const char* name, std::vector<Edge> next_edges, BackwardFn backward)
      : Node(std::move(next_edges)), name_(name), backward_(std::move(backward)) {}
  const char* name() const override { return name_; }
  std::vector<Tensor> apply(Tensor grad, bool retain_graph) override;
  bool released() const { return !backward_; }

 private:
  const char* name_;
  BackwardFn backward_;
};

// The end of a leaf's path: adds the incoming gradient into the leaf's grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : Node({}), variable_(std::move(variable)) {}
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(Tensor grad, bool retain_graph) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

// Autograd's part of a TensorImpl, created only for tensors that take part in a graph.
struct AutogradMeta {
  bool requires_grad = false;  // set on leaves by requires_grad_()
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;                       // null for leaves
  std::weak_ptr<Node> grad_accumulator;                // leaves: made when first used by an op
  std::vector<std::pair<unsigned, TensorHook>> hooks;  // leaves' tensor hooks
};

}  // namespace frugal::autograd
