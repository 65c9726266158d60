// Module's bookkeeping: registration, recursive traversal with dotted names, mode switches,
// conversions, state_dict round trips and the PyTorch-style description.
#include "nn/module.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/copy.h"

namespace frugal::nn {

Tensor Module::forward(const Tensor&) {
  throw Error(name_ + ": this module has no single-tensor forward(); call its own methods");
}

Tensor& Module::register_parameter(const std::string& name, Tensor& member, bool requires_grad) {
  FRUGAL_CHECK(!name.empty() && name.find('.') == std::string::npos,
               name_ + ": parameter name '" + name + "' must be non-empty and contain no '.'");
  if (member.defined() && requires_grad && !member.requires_grad()) member.requires_grad_(true);
  parameters_.emplace_back(name, &member);
  return member;
}

Tensor& Module::register_buffer(const std::string& name, Tensor& member) {
  FRUGAL_CHECK(!name.empty() && name.find('.') == std::string::npos,
               name_ + ": buffer name '" + name + "' must be non-empty and contain no '.'");
  buffers_.emplace_back(name, &member);
  return member;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  FRUGAL_CHECK(module != nullptr, name_ + ": child module '" + name + "' is null");
  for (const auto& [n, m] : children_)
    FRUGAL_CHECK(n != name, name_ + ": a child module named '" + name + "' already exists");
  children_.emplace_back(name, std::move(module));
}

template <class F>
void Module::visit_tensors(bool parameters, bool recurse, const std::string& prefix,
                           const F& f) const {
  for (const auto& [name, member] : parameters ? parameters_ : buffers_)
    if (member->defined()) f(prefix + name, *member);
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->visit_tensors(parameters, true, prefix + name + ".", f);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  visit_tensors(true, recurse, "",
                [&](const std::string& n, const Tensor& t) { out.emplace_back(n, t); });
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  visit_tensors(false, recurse, "",
                [&](const std::string& n, const Tensor& t) { out.emplace_back(n, t); });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, child] : children_) child->train(on);
}

namespace {

// Calls f on every registered member tensor slot (so it can be replaced), recursively.
template <class F>
void for_each_slot(const std::vector<std::pair<std::string, Tensor*>>& slots, const F& f) {
  for (const auto& [name, member] : slots)
    if (member->defined()) f(*member);
}

}  // namespace

void Module::to(ScalarType dtype) {
  NoGradGuard no_grad;
  auto convert = [dtype](Tensor& t, bool parameter) {
    if (!t.is_floating_point() || t.dtype() == dtype) return;
    Tensor converted = t.to(dtype).detach();
    if (parameter) converted.requires_grad_(t.requires_grad());
    t = converted;
  };
  for_each_slot(parameters_, [&](Tensor& t) { convert(t, true); });
  for_each_slot(buffers_, [&](Tensor& t) { convert(t, false); });
  for (auto& [n, child] : children_) child->to(dtype);
}

void Module::to(Device device) {
  for_each_slot(parameters_, [&](Tensor& t) {
    if (t.device() != device) {
      const bool rg = t.requires_grad();
      t = t.to(device).detach();
      if (rg) t.requires_grad_(true);
    }
  });
  for_each_slot(buffers_, [&](Tensor& t) {
    if (t.device() != device) t = t.to(device);
  });
  for (auto& [n, child] : children_) child->to(device);
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& entry : named_buffers()) out.push_back(std::move(entry));
  return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) given[name] = &t;
  NamedTensors mine = state_dict();
  std::vector<std::string> problems;
  std::map<std::string, bool> used;
  for (const auto& [name, t] : mine) {
    auto it = given.find(name);
    if (it == given.end()) {
      if (strict) problems.push_back("missing '" + name + "'");
      continue;
    }
    used[name] = true;
    const Tensor& src = *it->second;
    if (src.sizes() != t.sizes() || src.dtype() != t.dtype())
      problems.push_back("'" + name + "' is " + dtype_name(src.dtype()) +
                         shape_string(src.sizes()) + " in the state but " + dtype_name(t.dtype()) +
                         shape_string(t.sizes()) + " in the module");
  }
  if (strict)
    for (const auto& [name, t] : state)
      if (!used.count(name)) problems.push_back("unexpected '" + name + "'");
  if (!problems.empty()) {
    std::string message = name_ + ".load_state_dict: ";
    for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message);
  }
  NoGradGuard no_grad;  // copying into parameters is not part of any graph
  for (auto& [name, t] : mine) {
    auto it = given.find(name);
    if (it != given.end()) copy_data(t, *it->second), t.impl()->storage()->bump_version();
  }
}

void Module::zero_grad(bool set_to_none) { nn::zero_grad(parameters(), set_to_none); }

void zero_grad(const std::vector<Tensor>& parameters, bool set_to_none) {
  for (Tensor p : parameters) {  // a handle copy: the gradient lives in the shared TensorImpl
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none)
      g = Tensor();
    else
      g.zero_();
  }
}

namespace {

void describe_into(std::ostringstream& out, const Module& m, int indent) {
  out << m.name() << '(' << m.extra_repr();
  if (m.named_children().empty()) {
    out << ')';
    return;
  }
  out << '\n';
  for (const auto& [name, child] : m.named_children()) {
    out << std::string(static_cast<std::size_t>(indent + 2), ' ') << '(' << name << "): ";
    describe_into(out, *child, indent + 2);
    out << '\n';
  }
  out << std::string(static_cast<std::size_t>(indent), ' ') << ')';
}

}  // namespace

std::string describe(const Module& module) {
  std::ostringstream out;
  describe_into(out, module, 0);
  return out.str();
}

}  // namespace frugal::nn
