// nn::utils::prune: magnitude pruning as torch.nn.utils.prune (l1_unstructured, ln_structured,
// global_unstructured, custom_from_mask, remove, is_pruned), and shrink_pruned_units, which
// turns the units and channels that structured pruning zeroed into a physically smaller model.
//
// How a pruned parameter stays pruned. PyTorch keeps weight_orig and a mask buffer and
// recomputes weight = weight_orig * mask in a forward pre-hook. frugal's modules have no
// forward hooks, so here the pruned entries are zeroed in the parameter itself and a gradient
// hook on it (Tensor::register_hook) multiplies its gradient by the mask: the gradient of a
// pruned entry is exactly 0, so SGD (with momentum and weight decay: 0 * decay is 0) and
// AdamW (zero moments, decoupled decay of 0) never move it off zero. The mask — a tensor of
// the parameter's dtype and shape, 1 kept / 0 pruned, from the allocator — is owned by that
// hook and so lives exactly as long as the parameter; remove() drops the hook and frees it.
// Unlike PyTorch the mask is not in the module's state_dict, and whatever writes the
// parameter directly (load_state_dict, copy_, Module::to, which makes a new tensor without
// the hook) is not masked: prune after loading and converting.
//
// Amounts are fractions in [0, 1] of the whole tensor (round(amount * count) entries or
// slices, as PyTorch rounds). Pruning a parameter again keeps what was pruned before and
// prunes the smallest of the rest until the total reaches the new amount: prune 0.5 then 0.8
// gives 80% zeros (PyTorch instead takes the second amount of what is left). Ties in
// magnitude are broken by position: the entry (or slice) with the lower flat index goes first.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/sequential.h"

namespace frugal::nn::utils::prune {

// Zeroes the round(amount * numel) entries of `module`'s parameter `name` (its own, not a
// child's: "weight", not "0.weight") with the smallest absolute values.
void l1_unstructured(Module& module, const std::string& name, double amount);

// Zeroes whole slices along `dim` (dim 0 of a Linear or Conv2d weight: output units/channels):
// the round(amount * size(dim)) slices with the smallest L_n norm (n > 0, or infinity).
void ln_structured(Module& module, const std::string& name, double amount, double n,
                   std::int64_t dim);

// l1_unstructured over all the listed parameters together: the round(amount * total) entries
// with the smallest absolute values among all of them, wherever they are (torch's
// global_unstructured with pruning_method=L1Unstructured).
void global_unstructured(const std::vector<std::pair<Module*, std::string>>& parameters,
                         double amount);

// Prunes `name` where `mask` is 0 (torch's custom_from_mask): the mask must have the
// parameter's shape; earlier pruning is kept. Used, for one, to prune a BatchNorm2d's weight
// and bias at the channels ln_structured zeroed in the convolution before it.
void custom_from_mask(Module& module, const std::string& name, const Tensor& mask);

// Makes the pruning of `name` permanent: the zeros stay in the parameter, the gradient hook
// and the mask go (its bytes back to the allocator). A frugal::Error if it is not pruned.
void remove(Module& module, const std::string& name);

// Whether any parameter of `module` or of its children is pruned (has a mask).
bool is_pruned(const Module& module);

// The number of entries of the parameter's mask that are pruned (0 if it has none).
std::int64_t pruned_count(const Module& module, const std::string& name);

// A new Sequential without the units and channels that pruning zeroed, computing the same
// outputs up to float rounding:
// - Linear -> (ReLU) -> Linear: an output unit whose weight row is all zero goes (its weight
//   row and bias entry, and the next Linear's column). Its output was the constant
//   relu(bias) (bias without the ReLU), folded into the next Linear's bias.
// - Conv2d -> BatchNorm2d -> (ReLU | MaxPool2d)* -> Conv2d, or -> Flatten -> Linear: an
//   output channel goes (its filters, its batch-norm entries and running statistics, and the
//   next layer's input channel or the Linear's columns for it) when its filters are zero AND
//   its BatchNorm2d weight and bias are zero: the channel is then exactly 0 in training and
//   in eval mode. Prune all three with the same channels (ln_structured on the Conv2d, then
//   custom_from_mask on the BatchNorm2d). A zeroed channel with a nonzero shift is kept: its
//   constant cannot be folded into a convolution with zero padding.
// Groups other than 1 and other layouts are left as they are. Rebuilt layers are new modules
// (plain parameters, no masks); every other child is shared, not copied.
std::shared_ptr<Sequential> shrink_pruned_units(const Sequential& model);

}  // namespace frugal::nn::utils::prune
