// shrink_pruned_units: rebuilds a Sequential without the Linear units and Conv2d channels that
// pruning zeroed, folding constant outputs into the next bias where that is exact.
#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/prune.h"
#include "nn/stateless.h"

namespace frugal::nn::utils::prune {
namespace {

// The values of `t` on the CPU as float64, in order.
std::vector<double> to_doubles(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor c = t.detach().to(Device(kCPU)).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

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
