// Magnitude pruning: masks chosen on the CPU in float64, applied to the parameter in place,
// kept by a gradient hook; a registry of weak handles finds a parameter's mask again; and the
// Linear-chain shrink that removes zeroed units for real.
#include "nn/prune.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/stateless.h"

namespace frugal::nn::utils::prune {
namespace {

// A pruned parameter: its gradient hook, and the mask that hook owns. Weak handles, so that
// the registry never keeps a parameter or a mask alive; an entry whose parameter is gone (or
// whose address a new tensor now has) is stale and dropped when met.
struct Entry {
  std::weak_ptr<TensorImpl> parameter;
  std::weak_ptr<TensorImpl> mask;
  unsigned hook = 0;
};

std::mutex registry_mutex;
std::map<const TensorImpl*, Entry>& registry() {
  static std::map<const TensorImpl*, Entry> entries;
  return entries;
}

// The live entry of `parameter`, or null. Caller holds registry_mutex.
Entry* find_entry(const Tensor& parameter) {
  auto& entries = registry();
  std::erase_if(entries, [](const auto& e) { return e.second.parameter.expired(); });
  auto it = entries.find(parameter.impl());
  if (it == entries.end()) return nullptr;
  if (it->second.parameter.lock() != parameter.impl_ptr() || it->second.mask.expired()) {
    entries.erase(it);  // the address was reused, or the hook was removed by someone else
    return nullptr;
  }
  return &it->second;
}

void check_amount(const char* function, double amount) {
  FRUGAL_CHECK(amount >= 0.0 && amount <= 1.0,  // false for NaN too
               std::string(function) + ": amount must be a fraction in [0, 1], got " +
                   std::to_string(amount));
}

// The module's own parameter `name` (a handle sharing its TensorImpl).
Tensor find_parameter(const char* function, const Module& module, const std::string& name) {
  std::string names;
  for (const auto& [n, t] : module.named_parameters(/*recurse=*/false)) {
    if (n == name) {
      FRUGAL_CHECK(t.is_floating_point(), std::string(function) + ": parameter '" + name + "' of " +
                                              module.name() + " is not floating-point");
      return t;
    }
    names += (names.empty() ? "" : ", ") + n;
  }
  throw Error(std::string(function) + ": " + module.name() + " has no parameter '" + name +
              "' (its own parameters: " + (names.empty() ? "none" : names) + ")");
}

std::vector<double> to_doubles(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor c = t.detach().to(Device(kCPU)).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// The current mask of `parameter` as 1/0 values (all ones when it is not pruned).
std::vector<double> current_mask(const Tensor& parameter) {
  Tensor mask;
  {
    std::lock_guard lock(registry_mutex);
    if (Entry* e = find_entry(parameter)) mask = Tensor(e->mask.lock());
  }
  if (!mask.defined()) return std::vector<double>(static_cast<std::size_t>(parameter.numel()), 1.0);
  return to_doubles(mask);
}

// Zeroes the parameter where `keep` is 0 and (re)installs the gradient hook with that mask.
void apply_mask(const Tensor& parameter, const std::vector<double>& keep) {
  NoGradGuard no_grad;
  const Tensor mask = from_data(keep.data(), parameter.sizes(), kFloat64)
                          .to(parameter.dtype())
                          .to(parameter.device());
  Tensor(parameter).mul_(mask);
  std::lock_guard lock(registry_mutex);
  if (Entry* old = find_entry(parameter)) {
    parameter.remove_hook(old->hook);  // frees the old mask
    registry().erase(parameter.impl());
  }
  // The gradient of a pruned entry is 0, so the optimizer never moves it off zero.
  const unsigned hook =
      parameter.register_hook([mask](const Tensor& grad) { return grad.mul(mask); });
  registry()[parameter.impl()] = Entry{parameter.impl_ptr(), mask.impl_ptr(), hook};
}

std::size_t rounded_count(double amount, std::size_t total) {
  return static_cast<std::size_t>(std::llround(amount * static_cast<double>(total)));
}

// Indices 0..keys.size()-1 with the `count` smallest keys first; ties by index (stable).
std::vector<std::size_t> smallest_first(const std::vector<double>& keys) {
  std::vector<std::size_t> order(keys.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  return order;
}

// Unstructured L1 pruning of several parameters as one pool of entries.
void unstructured(const std::vector<Tensor>& parameters, double amount) {
  std::vector<double> keys, keep;
  for (const Tensor& p : parameters) {
    const std::vector<double> values = to_doubles(p), mask = current_mask(p);
    for (std::size_t i = 0; i < values.size(); ++i) {
      // Entries pruned before sort first, so that they stay among the pruned.
      keys.push_back(mask[i] == 0.0 ? -1.0 : std::abs(values[i]));
      keep.push_back(mask[i]);
    }
  }
  const std::vector<std::size_t> order = smallest_first(keys);
  const std::size_t count = std::min(rounded_count(amount, keys.size()), order.size());
  for (std::size_t i = 0; i < count; ++i) keep[order[i]] = 0.0;
  std::size_t offset = 0;
  for (const Tensor& p : parameters) {
    const auto n = static_cast<std::size_t>(p.numel());
    apply_mask(p, std::vector<double>(keep.begin() + static_cast<std::ptrdiff_t>(offset),
                                      keep.begin() + static_cast<std::ptrdiff_t>(offset + n)));
    offset += n;
  }
}

}  // namespace

void l1_unstructured(Module& module, const std::string& name, double amount) {
  check_amount("l1_unstructured", amount);
  unstructured({find_parameter("l1_unstructured", module, name)}, amount);
}

void global_unstructured(const std::vector<std::pair<Module*, std::string>>& parameters,
                         double amount) {
  check_amount("global_unstructured", amount);
  FRUGAL_CHECK(!parameters.empty(), "global_unstructured: no parameters given");
  std::vector<Tensor> tensors;
  std::set<const TensorImpl*> seen;
  for (const auto& [module, name] : parameters) {
    FRUGAL_CHECK(module != nullptr, "global_unstructured: a null module for '" + name + "'");
    Tensor p = find_parameter("global_unstructured", *module, name);
    FRUGAL_CHECK(seen.insert(p.impl()).second, "global_unstructured: parameter '" + name + "' of " +
                                                   module->name() + " is listed twice");
    tensors.push_back(std::move(p));
  }
  unstructured(tensors, amount);
}

void ln_structured(Module& module, const std::string& name, double amount, double n,
                   std::int64_t dim) {
  check_amount("ln_structured", amount);
  FRUGAL_CHECK(n > 0.0, "ln_structured: the norm's order n must be positive (or infinity), got " +
                            std::to_string(n));
  const Tensor p = find_parameter("ln_structured", module, name);
  const std::int64_t rank = p.dim();
  FRUGAL_CHECK(rank >= 1 && dim >= -rank && dim < rank,
               "ln_structured: dim " + std::to_string(dim) + " is out of range for parameter '" +
                   name + "' of " + module.name() + " with " + std::to_string(rank) +
                   " dimensions");
  if (dim < 0) dim += rank;
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < dim; ++d) outer *= p.size(d);
  for (std::int64_t d = dim + 1; d < rank; ++d) inner *= p.size(d);
  const std::int64_t slices = p.size(dim);
  const std::vector<double> values = to_doubles(p);
  std::vector<double> keep = current_mask(p);
  auto at = [&](std::int64_t o, std::int64_t s, std::int64_t i) {
    return static_cast<std::size_t>((o * slices + s) * inner + i);
  };
  std::vector<double> keys(static_cast<std::size_t>(slices));
  for (std::int64_t s = 0; s < slices; ++s) {
    double norm = 0;
    bool all_pruned = true;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const double v = std::abs(values[at(o, s, i)]);
        norm = std::isinf(n) ? std::max(norm, v) : norm + std::pow(v, n);
        all_pruned = all_pruned && keep[at(o, s, i)] == 0.0;
      }
    keys[static_cast<std::size_t>(s)] =
        all_pruned ? -1.0 : (std::isinf(n) ? norm : std::pow(norm, 1.0 / n));
  }
  const std::vector<std::size_t> order = smallest_first(keys);
  const std::size_t count = rounded_count(amount, keys.size());
  for (std::size_t k = 0; k < count; ++k) {
    const auto s = static_cast<std::int64_t>(order[k]);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) keep[at(o, s, i)] = 0.0;
  }
  apply_mask(p, keep);
}

void remove(Module& module, const std::string& name) {
  const Tensor p = find_parameter("remove", module, name);
  std::lock_guard lock(registry_mutex);
  Entry* e = find_entry(p);
  FRUGAL_CHECK(e != nullptr,
               "remove: parameter '" + name + "' of " + module.name() + " is not pruned");
  p.remove_hook(e->hook);  // the hook owned the mask: its bytes go back now
  registry().erase(p.impl());
}

bool is_pruned(const Module& module) {
  std::lock_guard lock(registry_mutex);
  for (const auto& [n, p] : module.named_parameters())
    if (find_entry(p)) return true;
  return false;
}

std::int64_t pruned_count(const Module& module, const std::string& name) {
  const Tensor p = find_parameter("pruned_count", module, name);
  std::int64_t count = 0;
  for (double m : current_mask(p)) count += m == 0.0;
  return count;
}

void custom_from_mask(Module& module, const std::string& name, const Tensor& mask) {
  const Tensor p = find_parameter("custom_from_mask", module, name);
  FRUGAL_CHECK(mask.defined() && mask.sizes() == p.sizes(),
               "custom_from_mask: the mask for parameter '" + name + "' of " + module.name() +
                   " must have its shape " + shape_string(p.sizes()) + ", got " +
                   (mask.defined() ? shape_string(mask.sizes()) : std::string("none")));
  const std::vector<double> given = to_doubles(mask);
  std::vector<double> keep = current_mask(p);
  for (std::size_t i = 0; i < keep.size(); ++i)
    if (given[i] == 0.0) keep[i] = 0.0;
  apply_mask(p, keep);
}

namespace {

std::vector<std::int64_t> all_indices(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

// The entries [r, c, ...] of `t` (seen as [rows, cols, inner]) for r in `rows` and c in
// `cols`, in that order, as a new tensor of `sizes` with t's dtype and device.
Tensor gather(const Tensor& t, std::int64_t cols_total, const std::vector<std::int64_t>& rows,
              const std::vector<std::int64_t>& cols, IntArrayRef sizes) {
  const std::vector<double> v = to_doubles(t);
  const std::int64_t rows_total = t.numel() == 0 ? 0 : t.size(0);
  const std::int64_t inner =
      rows_total * cols_total == 0 ? 1 : t.numel() / (rows_total * cols_total);
  std::vector<double> out;
  out.reserve(rows.size() * cols.size() * static_cast<std::size_t>(inner));
  for (std::int64_t r : rows)
    for (std::int64_t c : cols)
      for (std::int64_t i = 0; i < inner; ++i)
        out.push_back(v[static_cast<std::size_t>((r * cols_total + c) * inner + i)]);
  NoGradGuard no_grad;
  return from_data(out.data(), sizes, kFloat64).to(t.dtype()).to(t.device());
}

// Copies `values` into the member tensor `slot` of a freshly made module.
void fill(Tensor& slot, const Tensor& values) {
  NoGradGuard no_grad;
  copy_data(slot, values);
}

// A Linear rebuilt with the given input columns and output rows, and `bias_add` (one per
// kept output) added to its bias. The new tensors have the old ones' dtype and device.
std::shared_ptr<Linear> rebuild_linear(const Linear& old, const std::vector<std::int64_t>& in_keep,
                                       const std::vector<std::int64_t>& out_keep,
                                       const std::vector<double>& bias_add) {
  const bool has_bias = old.bias.defined();
  // A zero bias_add on a Linear without bias needs none.
  const bool needs_bias =
      has_bias || std::any_of(bias_add.begin(), bias_add.end(), [](double v) { return v != 0; });
  const auto in = static_cast<std::int64_t>(in_keep.size());
  const auto out = static_cast<std::int64_t>(out_keep.size());
  auto fresh = std::make_shared<Linear>(in, out, needs_bias);
  fresh->to(old.weight.dtype());
  fresh->to(old.weight.device());
  fill(fresh->weight, gather(old.weight, old.in_features, out_keep, in_keep, {out, in}));
  if (needs_bias) {
    const std::vector<double> b = has_bias ? to_doubles(old.bias) : std::vector<double>();
    std::vector<double> nb;
    for (std::size_t r = 0; r < out_keep.size(); ++r)
      nb.push_back((has_bias ? b[static_cast<std::size_t>(out_keep[r])] : 0.0) + bias_add[r]);
    fill(fresh->bias, from_data(nb.data(), {out}, kFloat64).to(old.weight.dtype()));
  }
  fresh->train(old.is_training());
  return fresh;
}

std::shared_ptr<Conv2d> rebuild_conv(const Conv2d& old, const std::vector<std::int64_t>& in_keep,
                                     const std::vector<std::int64_t>& out_keep) {
  Conv2dOptions o = old.options;
  o.in_channels_ = static_cast<std::int64_t>(in_keep.size());
  o.out_channels_ = static_cast<std::int64_t>(out_keep.size());
  auto fresh = std::make_shared<Conv2d>(o);
  fresh->to(old.weight.dtype());
  fresh->to(old.weight.device());
  fill(fresh->weight,
       gather(old.weight, old.options.in_channels_, out_keep, in_keep, fresh->weight.sizes()));
  if (o.bias_) fill(fresh->bias, gather(old.bias, 1, out_keep, {0}, {o.out_channels_}));
  fresh->train(old.is_training());
  return fresh;
}

std::shared_ptr<BatchNorm2d> rebuild_batch_norm(const BatchNorm2d& old,
                                                const std::vector<std::int64_t>& keep) {
  BatchNormOptions o = old.options;
  o.num_features_ = static_cast<std::int64_t>(keep.size());
  auto fresh = std::make_shared<BatchNorm2d>(o);
  fresh->to(old.running_mean.defined() ? old.running_mean.dtype() : old.weight.dtype());
  fresh->to(old.running_mean.defined() ? old.running_mean.device() : old.weight.device());
  for (auto [slot, source] :
       {std::pair{&fresh->weight, &old.weight}, std::pair{&fresh->bias, &old.bias},
        std::pair{&fresh->running_mean, &old.running_mean},
        std::pair{&fresh->running_var, &old.running_var}})
    if (source->defined()) fill(*slot, gather(*source, 1, keep, {0}, {o.num_features_}));
  if (old.num_batches_tracked.defined()) fill(fresh->num_batches_tracked, old.num_batches_tracked);
  fresh->train(old.is_training());
  return fresh;
}

bool all_zero(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  return std::all_of(v.begin() + static_cast<std::ptrdiff_t>(begin),
                     v.begin() + static_cast<std::ptrdiff_t>(end), [](double x) { return x == 0; });
}

// What shrinking keeps of one child: input and output indices (features or channels), and
// for a Linear what to add to each original output's bias.
struct Plan {
  std::vector<std::int64_t> in_keep, out_keep;
  std::vector<double> bias_add;
  bool changed = false;
};

template <class M>
const M* child_as(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children,
                  std::size_t i) {
  return i < children.size() ? dynamic_cast<const M*>(children[i].second.get()) : nullptr;
}

}  // namespace

std::shared_ptr<Sequential> shrink_pruned_units(const Sequential& model) {
  const auto& children = model.named_children();
  const std::size_t count = children.size();
  std::vector<Plan> plans(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (const auto* linear = child_as<Linear>(children, i)) {
      plans[i].in_keep = all_indices(linear->in_features);
      plans[i].out_keep = all_indices(linear->out_features);
      plans[i].bias_add.assign(static_cast<std::size_t>(linear->out_features), 0.0);
    } else if (const auto* conv = child_as<Conv2d>(children, i)) {
      plans[i].in_keep = all_indices(conv->options.in_channels_);
      plans[i].out_keep = all_indices(conv->options.out_channels_);
    } else if (const auto* bn = child_as<BatchNorm2d>(children, i)) {
      plans[i].out_keep = all_indices(bn->options.num_features_);
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (const auto* linear = child_as<Linear>(children, i)) {
      std::size_t j = i + 1;
      const bool relu = child_as<ReLU>(children, j) != nullptr;
      if (relu) ++j;
      const auto* next = child_as<Linear>(children, j);
      if (!next) continue;
      const std::vector<double> w = to_doubles(linear->weight);
      const std::vector<double> b =
          linear->bias.defined() ? to_doubles(linear->bias) : std::vector<double>();
      std::vector<std::int64_t> dead, alive;
      for (std::int64_t u = 0; u < linear->out_features; ++u) {
        const auto row = static_cast<std::size_t>(u * linear->in_features);
        (all_zero(w, row, row + static_cast<std::size_t>(linear->in_features)) ? dead : alive)
            .push_back(u);
      }
      if (dead.empty() || alive.empty()) continue;  // nothing to remove, or nothing would remain
      plans[i].out_keep = alive;
      plans[i].changed = plans[j].changed = true;
      // The dead unit's output is a constant: fold its effect into the next layer's bias.
      const std::vector<double> nw = to_doubles(next->weight);
      for (std::int64_t u : dead) {
        // Its bias, plus what an earlier shrink folded into it.
        double c = (b.empty() ? 0.0 : b[static_cast<std::size_t>(u)]) +
                   plans[i].bias_add[static_cast<std::size_t>(u)];
        if (relu) c = std::max(c, 0.0);
        if (c == 0.0) continue;
        for (std::int64_t r = 0; r < next->out_features; ++r)
          plans[j].bias_add[static_cast<std::size_t>(r)] +=
              nw[static_cast<std::size_t>(r * next->in_features + u)] * c;
      }
      plans[j].in_keep = alive;
    } else if (const auto* conv = child_as<Conv2d>(children, i)) {
      // Conv2d -> BatchNorm2d -> (ReLU | MaxPool2d)* -> Conv2d, or -> Flatten -> Linear.
      const std::int64_t channels = conv->options.out_channels_;
      const auto* bn = child_as<BatchNorm2d>(children, i + 1);
      if (conv->options.groups_ != 1 || !bn || !bn->options.affine_ ||
          bn->options.num_features_ != channels)
        continue;
      std::size_t k = i + 2;
      while (child_as<ReLU>(children, k) || child_as<MaxPool2d>(children, k)) ++k;
      const auto* next_conv = child_as<Conv2d>(children, k);
      const auto* flatten = child_as<Flatten>(children, k);
      const auto* next_linear = flatten ? child_as<Linear>(children, k + 1) : nullptr;
      if (next_conv &&
          (next_conv->options.groups_ != 1 || next_conv->options.in_channels_ != channels))
        continue;
      if (!next_conv && !(next_linear && flatten->start_dim == 1 && flatten->end_dim == -1 &&
                          next_linear->in_features % channels == 0))
        continue;
      // A channel is dead when its convolution is zero and its batch norm's scale and shift
      // are zero: its output is then exactly 0 in training and in eval mode (batch or running
      // statistics alike), so removing it changes nothing downstream.
      const std::vector<double> w = to_doubles(conv->weight);
      const std::vector<double> cb =
          conv->bias.defined() ? to_doubles(conv->bias) : std::vector<double>();
      const std::vector<double> gamma = to_doubles(bn->weight), beta = to_doubles(bn->bias);
      const auto slice = static_cast<std::size_t>(conv->weight.numel() / channels);
      std::vector<std::int64_t> alive;
      for (std::int64_t c = 0; c < channels; ++c) {
        const auto u = static_cast<std::size_t>(c);
        const bool dead = all_zero(w, u * slice, (u + 1) * slice) && (cb.empty() || cb[u] == 0) &&
                          gamma[u] == 0 && beta[u] == 0;
        if (!dead) alive.push_back(c);
      }
      if (alive.empty() || static_cast<std::int64_t>(alive.size()) == channels) continue;
      plans[i].out_keep = plans[i + 1].out_keep = alive;
      plans[i].changed = plans[i + 1].changed = true;
      if (next_conv) {
        plans[k].in_keep = alive;
        plans[k].changed = true;
      } else {
        const std::int64_t per_channel = next_linear->in_features / channels;
        std::vector<std::int64_t> columns;
        for (std::int64_t c : alive)
          for (std::int64_t s = 0; s < per_channel; ++s) columns.push_back(c * per_channel + s);
        plans[k + 1].in_keep = columns;
        plans[k + 1].changed = true;
      }
    }
  }
  auto out = std::make_shared<Sequential>();
  for (std::size_t i = 0; i < count; ++i) {
    const auto& child = children[i].second;
    const Plan& plan = plans[i];
    if (!plan.changed) {
      out->push_back(child);
    } else if (const auto* linear = child_as<Linear>(children, i)) {
      std::vector<double> bias_add;
      for (std::int64_t u : plan.out_keep)
        bias_add.push_back(plan.bias_add[static_cast<std::size_t>(u)]);
      out->push_back(rebuild_linear(*linear, plan.in_keep, plan.out_keep, bias_add));
    } else if (const auto* conv = child_as<Conv2d>(children, i)) {
      out->push_back(rebuild_conv(*conv, plan.in_keep, plan.out_keep));
    } else {
      out->push_back(rebuild_batch_norm(*child_as<BatchNorm2d>(children, i), plan.out_keep));
    }
  }
  out->train(model.is_training());
  return out;
}

}  // namespace frugal::nn::utils::prune
