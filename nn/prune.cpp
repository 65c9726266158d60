// Magnitude pruning: masks chosen on the CPU in float64, applied to the parameter in place and
// kept by a gradient hook; a registry of weak handles finds a parameter's mask again.
// (shrink_pruned_units is in prune_shrink.cpp.)
#include "nn/prune.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"

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

}  // namespace frugal::nn::utils::prune
