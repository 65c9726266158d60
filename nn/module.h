// nn::Module: the base of every layer and model, as in libtorch — named parameters and
// buffers, child modules, train()/eval(), to(dtype), state_dict()/load_state_dict() and a
// parameter count. A layer keeps its tensors as public members (`linear->weight`) and
// registers their addresses, so that to() or load_state_dict() replacing a tensor updates
// the member too. Modules are shared (std::shared_ptr) and never copied.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace frugal::nn {

// Name-tensor pairs in registration order (libtorch returns an OrderedDict).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The type name ("Linear", "Conv2d", "Sequential" ...).
  const std::string& name() const { return name_; }
  // The settings shown in describe(): "in_features=784, out_features=10, bias=true".
  virtual std::string extra_repr() const { return ""; }
  // The forward of modules that map one tensor to one tensor (every layer here). Modules
  // without one raise a frugal::Error naming themselves.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // Parameters and buffers of this module and, with recurse, of its children, named by
  // their path ("0.weight", "features.3.running_mean").
  NamedTensors named_parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  std::vector<std::shared_ptr<Module>> children() const;
  // Number of elements in all parameters.
  std::int64_t parameter_count() const;

  // Training mode (batch-norm statistics, dropout); applies to all children.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Converts floating-point parameters and buffers (integer buffers such as
  // num_batches_tracked keep their type). Parameters stay leaves that require grad.
  void to(ScalarType dtype);
  void to(Device device);

  // Every parameter and buffer, named as named_parameters / named_buffers, parameters first.
  NamedTensors state_dict() const;
  // Copies values in. Names, shapes and dtypes must match exactly unless strict is false
  // (then missing and unexpected names are skipped); a mismatch is a frugal::Error listing
  // every offending name, and nothing is modified.
  void load_state_dict(const NamedTensors& state, bool strict = true);

  // Sets every parameter's gradient to none (the default, as in PyTorch) or to zero.
  void zero_grad(bool set_to_none = true);

 protected:
  // Registers a member tensor as a parameter (a leaf that requires grad) or a buffer, and
  // returns it. The member must outlive the module's use of it (it is a member).
  Tensor& register_parameter(const std::string& name, Tensor& member, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor& member);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  template <class F>
  void visit_tensors(bool parameters, bool recurse, const std::string& prefix, const F& f) const;

  std::string name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor*>> parameters_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// Sets each tensor's gradient to none (frees it) or to zero: Module's and Optimizer's zero_grad.
void zero_grad(const std::vector<Tensor>& parameters, bool set_to_none = true);

// Renders the module tree like PyTorch's repr: "Sequential(\n  (0): Conv2d(...)\n ...)".
std::string describe(const Module& module);

}  // namespace frugal::nn
