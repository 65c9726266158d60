// The batch-size search (probe, fit, propose, verify, refine or back off) and the Module
// overload, which builds frugal-train's step and puts the model back as it found it.
#include "nn/batch_size_finder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "engine/autocast.h"
#include "engine/autograd/grad_mode.h"
#include "engine/generator.h"
#include "engine/ops/factory.h"
#include "engine/ops/loss.h"

namespace frugal::nn {

namespace {

struct Point {
  std::int64_t batch;
  std::int64_t peak;
};

struct Line {
  double a = 0, b = 0;
  // The largest batch whose predicted peak is within budget (may be below 1).
  std::int64_t largest_within(std::int64_t budget, std::int64_t cap) const {
    if (b <= 0) return cap;  // the peak does not grow with the batch
    const double x = std::floor((static_cast<double>(budget) - a) / b);
    return static_cast<std::int64_t>(std::min<double>(x, static_cast<double>(cap)));
  }
};

Line fit(Point p, Point q) {
  Line line;
  line.b = static_cast<double>(q.peak - p.peak) / static_cast<double>(q.batch - p.batch);
  line.a = static_cast<double>(p.peak) - line.b * static_cast<double>(p.batch);
  return line;
}

class Search {
 public:
  Search(const TrainingStep& step, alloc::CachingAllocator& allocator, std::int64_t budget)
      : step_(step), allocator_(allocator) {
    result_.budget = budget;
  }

  BatchSizeStep run(std::int64_t batch, const char* role) {
    BatchSizeStep s;
    s.role = role;
    s.batch = batch;
    // Every step starts from an empty cache, as the first step of a training run would:
    // near the capacity, whether a step runs out of memory depends on how the cache was
    // carved by the steps before it, and those were of other batch sizes.
    allocator_.empty_cache();
    allocator_.reset_peak_memory_stats();
    try {
      step_(batch);
    } catch (const OutOfMemoryError&) {
      s.out_of_memory = true;
    }
    s.peak_allocated = allocator_.stats().allocated_bytes.all().peak;
    s.fits = !s.out_of_memory && s.peak_allocated <= result_.budget;
    result_.steps.push_back(s);
    return s;
  }

  BatchSizeResult& result() { return result_; }

 private:
  const TrainingStep& step_;
  alloc::CachingAllocator& allocator_;
  BatchSizeResult result_;
};

[[noreturn]] void throw_batch_one_too_big(const BatchSizeStep& s, std::int64_t budget) {
  throw Error("find_batch_size: a training step at batch 1 does not fit the budget of " +
              std::to_string(budget) + " bytes (" +
              (s.out_of_memory ? std::string("out of memory")
                               : "its peak is " + std::to_string(s.peak_allocated) + " bytes") +
              "); free memory, use a smaller model, or raise the budget");
}

}  // namespace

BatchSizeResult find_batch_size(const TrainingStep& step, alloc::CachingAllocator& allocator,
                                std::int64_t budget, const BatchSizeFinderOptions& options) {
  FRUGAL_CHECK(static_cast<bool>(step), "find_batch_size: the training step is empty");
  FRUGAL_CHECK(budget >= 0,
               "find_batch_size: the budget must be >= 0 bytes, got " + std::to_string(budget));
  FRUGAL_CHECK(options.first_probe >= 1 && options.second_probe > options.first_probe,
               "find_batch_size: the probe batches must satisfy 1 <= first < second, got " +
                   std::to_string(options.first_probe) + " and " +
                   std::to_string(options.second_probe));
  FRUGAL_CHECK(
      options.max_batch >= 1 && options.max_batch < (std::int64_t{1} << 40),
      "find_batch_size: max_batch must be in [1, 2^40), got " + std::to_string(options.max_batch));
  FRUGAL_CHECK(
      options.backoff > 0 && options.backoff < 1,
      "find_batch_size: backoff must be in (0, 1), got " + std::to_string(options.backoff));
  FRUGAL_CHECK(options.device_headroom >= 0 && options.device_headroom < 1,
               "find_batch_size: device_headroom must be in [0, 1), got " +
                   std::to_string(options.device_headroom));
  auto limit = static_cast<std::int64_t>(allocator.memory_limit());
  // On a GPU the limit is the device's total, but memory held outside this allocator (other
  // processes, the CUDA context, cuBLAS's and cuDNN's own) cannot be had either: what the
  // allocator holds plus what the device has free is the most a step can reach. Without this
  // the default budget on a shared GPU lay above what exists, every proposal ran out of
  // memory, and the backing off by 10% a try ran out of steps at the second probe's batch.
  if (const std::optional<std::size_t> free = allocator.backend().device_free_memory())
    limit = std::min(limit, static_cast<std::int64_t>(allocator.memory_reserved() + *free));
  if (budget == 0)
    budget =
        static_cast<std::int64_t>(static_cast<double>(limit) * (1.0 - options.device_headroom));
  budget = std::min(budget, limit);  // no step can use more than the device has
  Search search(step, allocator, budget);
  BatchSizeResult& result = search.result();

  // The warm-up makes the optimizer's state and the gradients exist, as in every step of a
  // running training, so that both probes measure the same steady state. Where a probe
  // batch does not fit, smaller ones are tried down to 1.
  std::int64_t p1 = std::min(options.first_probe, options.max_batch);
  BatchSizeStep warm = search.run(p1, "warm-up");
  while (warm.out_of_memory && p1 > 1)
    warm = search.run(p1 = std::max<std::int64_t>(1, p1 / 2), "warm-up");
  BatchSizeStep first = search.run(p1, "probe");
  while (!first.fits && p1 > 1) first = search.run(p1 = std::max<std::int64_t>(1, p1 / 2), "probe");
  if (!first.fits) throw_batch_one_too_big(first, budget);
  if (p1 == options.max_batch) {
    result.batch = p1;
    result.measured_peak = result.predicted_peak = first.peak_allocated;
    result.fixed_bytes = static_cast<double>(first.peak_allocated);
    return result;
  }

  std::int64_t p2 = std::clamp(options.second_probe, p1 + 1, options.max_batch);
  BatchSizeStep second = search.run(p2, "probe");
  while (!second.fits && p2 > p1 + 1) {
    p2 = p1 + (p2 - p1) / 2;
    second = search.run(p2, "probe");
  }
  if (second.out_of_memory) {  // no slope to fit: p1 fits and p1 + 1 does not
    result.batch = p1;
    result.measured_peak = first.peak_allocated;
    result.predicted_peak = first.peak_allocated;
    result.fixed_bytes = static_cast<double>(first.peak_allocated);
    result.next_batch_failed = true;
    return result;
  }
  const Line probes = fit(Point{p1, first.peak_allocated}, Point{p2, second.peak_allocated});
  result.fixed_bytes = probes.a;
  result.bytes_per_sample = probes.b;

  // below: the largest batch a real step showed to fit, and the one that did before it (the
  // local slope, which for a convex peak never over-states the growth above); above: the
  // smallest batch that did not fit. Out-of-memory below the budget (fragmentation near the
  // device's capacity) is on no line: between a batch that ran and one that failed that
  // way, bisect.
  Point below = second.fits ? Point{p2, second.peak_allocated} : Point{p1, first.peak_allocated};
  Point before_below{p1, first.peak_allocated};
  // max_batch + 1 stands for a failure, so that no try goes past the cap.
  Point above{second.fits ? options.max_batch + 1 : p2, second.peak_allocated};
  bool above_oom = false;
  // Above `below` the secant through it and the fit before it under-states the growth of a
  // convex peak (an upper bound on the answer); the chord from `below` to a measured `above`
  // over-states it (a lower bound). Where both exist the next try is between them. The
  // search stops when the batch just above the best one has failed, or the steps run out.
  const auto secant_bound = [&] {
    return before_below.batch < below.batch
               ? fit(before_below, below).largest_within(budget, options.max_batch)
               : options.max_batch;
  };
  std::int64_t candidate = probes.largest_within(budget, options.max_batch);
  for (int attempt = 0; attempt < options.max_verify_steps; ++attempt) {
    if (above.batch - below.batch <= 1) break;
    candidate = std::clamp(candidate, below.batch + 1, above.batch - 1);
    const BatchSizeStep v = search.run(candidate, "verify");
    const Point measured{candidate, v.peak_allocated};
    if (v.fits) {
      before_below = below;
      below = measured;
    } else {
      above = measured;
      above_oom = v.out_of_memory;
    }
    if (above.batch == options.max_batch + 1) {
      candidate = secant_bound();
    } else if (above_oom) {
      // Nothing verified above the probes yet: back off by a share; otherwise bisect.
      candidate = below.batch == p2 || below.batch == p1
                      ? static_cast<std::int64_t>(
                            std::floor(static_cast<double>(above.batch) * options.backoff))
                      : below.batch + (above.batch - below.batch) / 2;
    } else {
      const std::int64_t lower = fit(below, above).largest_within(budget, options.max_batch);
      candidate = lower + (std::max(lower, std::min(secant_bound(), above.batch - 1)) - lower) / 2;
    }
  }
  const std::int64_t best = below.batch;
  const std::int64_t best_peak = below.peak;
  const std::int64_t fail = above.batch == options.max_batch + 1 ? 0 : above.batch;
  result.batch = best;
  result.measured_peak = best_peak;
  result.predicted_peak = result.predict(best);
  result.next_batch_failed = fail == best + 1;
  return result;
}

namespace {

// A tensor's value kept in plain host memory, outside the allocators, so that the snapshot
// the finder keeps is not counted in the peaks it measures (it holds no handle to the tensor).
class HostCopy {
 public:
  explicit HostCopy(const Tensor& t) : defined_(t.defined()) {
    if (!defined_) return;
    sizes_.assign(t.sizes().begin(), t.sizes().end());
    dtype_ = t.dtype();
    device_ = t.device();
    const Tensor host = t.is_cpu() ? t.contiguous() : t.to(Device(kCPU)).contiguous();
    bytes_.resize(host.nbytes());
    if (!bytes_.empty()) std::memcpy(bytes_.data(), host.data_ptr(), bytes_.size());
  }
  // A new tensor with the saved value (undefined if the saved one was).
  Tensor value() const {
    if (!defined_) return Tensor();
    Tensor host = empty(sizes_, TensorOptions(dtype_));
    if (!bytes_.empty()) std::memcpy(host.data_ptr(), bytes_.data(), bytes_.size());
    return device_.is_cpu() ? host : host.to(device_);
  }

 private:
  bool defined_;
  std::vector<std::int64_t> sizes_;
  ScalarType dtype_ = kFloat32;
  Device device_;
  std::vector<std::byte> bytes_;
};

// Everything a training step changes in the model, put back by restore().
class ModelSnapshot {
 public:
  explicit ModelSnapshot(Module& model)
      : model_(model),
        training_(model.is_training()),
        seed_(default_generator().seed()),
        offset_(default_generator().offset()) {
    NoGradGuard no_grad;
    for (const auto& [name, t] : model.state_dict()) values_.emplace_back(t, HostCopy(t));
    for (const Tensor& p : model.parameters()) grads_.emplace_back(p, HostCopy(p.grad()));
  }
  void restore() {
    NoGradGuard no_grad;
    for (auto& [tensor, value] : values_) tensor.copy_(value.value());
    for (auto& [param, grad] : grads_) param.mutable_grad() = grad.value();
    model_.train(training_);
    default_generator().set_state(seed_, offset_);
  }

 private:
  Module& model_;
  bool training_;
  std::uint64_t seed_, offset_;
  // The live tensors (the model holds them anyway) beside their saved values.
  std::vector<std::pair<Tensor, HostCopy>> values_;
  std::vector<std::pair<Tensor, HostCopy>> grads_;
};

}  // namespace

BatchSizeResult find_batch_size(Module& model, const OptimizerFactory& make_optimizer,
                                const ModelTrainingStep& step, std::int64_t budget,
                                const BatchSizeFinderOptions& options) {
  FRUGAL_CHECK(static_cast<bool>(make_optimizer),
               "find_batch_size: the optimizer factory is empty");
  FRUGAL_CHECK(static_cast<bool>(step), "find_batch_size: the training step is empty");
  const std::vector<Tensor> parameters = model.parameters();
  FRUGAL_CHECK(!parameters.empty(), "find_batch_size: the model has no parameters to train");
  alloc::CachingAllocator& allocator =
      allocator_for(parameters.front().device(), "find_batch_size");

  ModelSnapshot snapshot(model);
  BatchSizeResult result;
  try {
    std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(parameters);
    FRUGAL_CHECK(optimizer != nullptr, "find_batch_size: the optimizer factory returned null");
    model.train();
    result = find_batch_size([&](std::int64_t batch) { step(batch, *optimizer); }, allocator,
                             budget, options);
  } catch (...) {
    snapshot.restore();  // the probe optimizer is gone already: its state never reaches the model
    throw;
  }
  snapshot.restore();
  return result;
}

BatchSizeResult find_batch_size(Module& model, const OptimizerFactory& make_optimizer,
                                const std::vector<std::int64_t>& sample_shape, std::int64_t budget,
                                const BatchSizeFinderOptions& options) {
  const std::vector<Tensor> parameters = model.parameters();
  FRUGAL_CHECK(!parameters.empty(), "find_batch_size: the model has no parameters to train");
  const Device device = parameters.front().device();
  const ModelTrainingStep step = [&](std::int64_t batch, optim::Optimizer& optimizer) {
    std::vector<std::int64_t> shape{batch};
    shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
    const Tensor input = randn(shape, TensorOptions(kFloat32).device(device));
    Tensor loss;
    {
      std::optional<AutocastGuard> autocast;
      if (options.autocast) autocast.emplace(device.type(), *options.autocast);
      const Tensor logits = model.forward(input);  // the graph keeps what backward needs
      FRUGAL_CHECK(logits.dim() == 2 && logits.size(0) == batch,
                   "find_batch_size: expected the model's output to be [batch, classes], got " +
                       shape_string(logits.sizes()));
      const Tensor target =
          randint(0, logits.size(1), {batch}, TensorOptions(kInt64).device(device));
      loss = cross_entropy(logits, target);
    }
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  };
  return find_batch_size(model, make_optimizer, step, budget, options);
}

std::string describe(const BatchSizeResult& r) {
  std::ostringstream out;
  out.precision(4);
  const double mib = 1024.0 * 1024.0;
  out << "peak allocated = " << r.fixed_bytes / mib << " MiB + " << r.bytes_per_sample / mib
      << " MiB x batch (from " << (r.steps.size() >= 3 ? "two probes" : "the probes")
      << "); budget " << static_cast<double>(r.budget) / mib << " MiB -> batch " << r.batch
      << ": predicted " << static_cast<double>(r.predicted_peak) / mib << " MiB, measured "
      << static_cast<double>(r.measured_peak) / mib << " MiB";
  if (r.measured_peak > 0)
    out << " ("
        << 100.0 * static_cast<double>(r.predicted_peak - r.measured_peak) /
               static_cast<double>(r.measured_peak)
        << "%)";
  out << (r.next_batch_failed
              ? "; batch " + std::to_string(r.batch + 1) + " was tried and did not fit"
              : "")
      << "; " << r.steps.size() << " steps run";
  return out.str();
}

}  // namespace frugal::nn
