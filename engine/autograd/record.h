// How an op records its history, used beside every forward:
//   if (autograd::needs_grad(a, b))
//     autograd::record(out, "mul", {a, b}, [sa = save(a, "mul"), ...](const Tensor& g,
//                                                                      InputGrads& gi) {...});
// record() links the output to its inputs' nodes; rebase() does the same for an in-place
// op, whose result replaces the history of the tensor it modified.
#pragma once

#include <initializer_list>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/autograd/saved_tensor.h"

namespace frugal::autograd {

inline bool requires_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

// Whether an op on these inputs must record history (undefined inputs are ignored).
template <class... Ts>
bool needs_grad(const Ts&... inputs) {
  return GradMode::is_enabled() && (requires_grad(inputs) || ...);
}

inline SavedTensor save(const Tensor& t, const char* op) { return SavedTensor(t, op); }

// The edge a gradient for `t` flows along: its grad_fn, or its leaf accumulator.
Edge gradient_edge(const Tensor& t);

// Makes `result` the output of a new node named `name` over `inputs`.
void record(Tensor& result, const char* name, std::initializer_list<Tensor> inputs,
            BackwardFn backward);

// For an in-place op on `self`: the node's first input is self's previous history.
// Raises a frugal::Error for a leaf that requires grad, or for a view of another tensor.
void rebase(Tensor& self, const char* name, std::initializer_list<Tensor> other_inputs,
            BackwardFn backward);

// Checks, before an in-place op modifies `self`, that autograd allows it: never on a leaf
// that requires grad while grad mode is on, and not on a view when the op records history.
void check_inplace(const Tensor& self, const char* name, bool records_history);

// Runs the backward pass (Tensor::backward). By value: a caller that moves the root and the
// gradient in (a checkpoint's recompute) lets them go as soon as the graph has consumed them.
void run_backward(Tensor root, Tensor gradient, bool retain_graph);

}  // namespace frugal::autograd
