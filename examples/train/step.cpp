// frugal-train's step: micro-batches, autocast around forward and loss only, scaled backward,
// and the scaler's step. The order of releases matters for the peak: each micro-batch's graph
// is gone (backward freed it) before the next forward starts.
#include "examples/train/step.h"

#include <algorithm>

#include "allocator/default_allocators.h"
#include "common/error.h"

namespace frugal::train {

AmpMode parse_amp(const std::string& text) {
  AmpMode m;
  m.name = text;
  if (text == "off") return m;
  if (text == "bf16") {
    m.dtype = kBFloat16;
    return m;
  }
  if (text == "fp16") {
    m.dtype = kFloat16;
    return m;
  }
  throw ConfigError("--amp must be off, bf16 or fp16, got '" + text + "'");
}

namespace {

// The loss and correct count of a step's micro-batches, still on the device.
struct Accumulated {
  Tensor loss_sum, correct;
};

// zero_grad, then forward and backward of each micro-batch: everything before the optimizer.
Accumulated accumulate_gradients(nn::Module& model, optim::Optimizer& optimizer,
                                 amp::GradScaler& scaler, const AmpMode& amp, const Tensor& images,
                                 const Tensor& targets, std::int64_t accum) {
  FRUGAL_CHECK(accum >= 1, "train_step: accum must be at least 1");
  const std::int64_t n = images.size(0);
  // The loss and the correct count stay on the device, summed over the micro-batches, and are
  // read once after the optimizer step: an item() per micro-batch before its backward made the
  // host wait for each forward before queueing the backward, so a GPU idled twice per step.
  // The loss sums in float64, each term float(loss) * images as the host summed it before.
  Tensor loss_sum, correct;
  optimizer.zero_grad();
  for (std::int64_t k = 0; k < accum; ++k) {
    const std::int64_t begin = k * n / accum, end = (k + 1) * n / accum;
    if (begin == end) continue;  // a last batch smaller than accum
    const Tensor x = images.narrow(0, begin, end - begin);
    const Tensor y = targets.narrow(0, begin, end - begin);
    Tensor loss;
    {
      // Forward and loss only: backward runs each op in the dtype its forward chose.
      AutocastGuard autocast(images.device().type(), amp.dtype, amp.enabled());
      const Tensor logits = model.forward(x);
      loss = cross_entropy(logits, y);
      const Tensor hits = eq(argmax(logits, 1), y).sum();
      correct = correct.defined() ? add(correct, hits) : hits;
    }
    const Tensor weighted =
        mul(loss.detach().to(kFloat32).to(kFloat64), static_cast<double>(end - begin));
    loss_sum = loss_sum.defined() ? add(loss_sum, weighted) : weighted;
    const double share = static_cast<double>(end - begin) / static_cast<double>(n);
    scaler.scale(accum == 1 ? loss : mul(loss, share)).backward();
  }
  return Accumulated{loss_sum, correct};
}

StepResult optimizer_step(optim::Optimizer& optimizer, amp::GradScaler& scaler,
                          const Accumulated& a) {
  StepResult r;
  r.stepped = scaler.step(optimizer);
  scaler.update();
  if (a.correct.defined()) {  // an empty batch has neither
    r.correct = a.correct.item<std::int64_t>();
    r.loss_sum = a.loss_sum.item<double>();
  }
  return r;
}

std::string first_line(const char* text) {
  const std::string s(text);
  return s.substr(0, s.find('\n'));
}

}  // namespace

StepResult train_step(nn::Module& model, optim::Optimizer& optimizer, amp::GradScaler& scaler,
                      const AmpMode& amp, const Tensor& images, const Tensor& targets,
                      std::int64_t accum) {
  const Accumulated a = accumulate_gradients(model, optimizer, scaler, amp, images, targets, accum);
  return optimizer_step(optimizer, scaler, a);
}

StepResult train_step_recovering(nn::Module& model, optim::Optimizer& optimizer,
                                 amp::GradScaler& scaler, const AmpMode& amp, const Tensor& images,
                                 const Tensor& targets, alloc::CachingAllocator& allocator,
                                 std::int64_t global_step, OomRecovery& recovery) {
  const std::int64_t n = images.size(0);
  recovery.accum = std::clamp<std::int64_t>(recovery.accum, 1, std::max<std::int64_t>(n, 1));
  // What a failed attempt may have changed before it ran out: the buffers (batch norm's
  // running statistics, updated by each micro-batch's forward) and the generator (dropout).
  // Buffers are a few KiB; the copies are made once per step, before any attempt.
  std::vector<std::pair<Tensor, Tensor>> buffers;  // (buffer, its value before the step)
  for (const auto& [name, b] : model.named_buffers()) buffers.emplace_back(b, b.clone());
  const std::uint64_t rng_seed = default_generator().seed();
  const std::uint64_t rng_offset = default_generator().offset();
  for (;;) {
    Accumulated a;
    try {
      a = accumulate_gradients(model, optimizer, scaler, amp, images, targets, recovery.accum);
    } catch (const OutOfMemoryError& e) {
      // The attempt's graph and activations were released as the error unwound through it.
      if (recovery.accum >= n) throw;
      optimizer.zero_grad();  // the partial gradients (set to none: freed)
      for (auto& [buffer, before] : buffers) buffer.copy_(before);
      default_generator().set_state(rng_seed, rng_offset);
      allocator.empty_cache();
      const std::int64_t from = recovery.accum;
      recovery.accum = std::min(n, 2 * recovery.accum);
      ++recovery.retries;
      recovery.history.push_back({global_step, from, recovery.accum, first_line(e.what())});
      continue;
    }
    return optimizer_step(optimizer, scaler, a);
  }
}

StepMemory measure_step_memory(const std::string& model_name, std::int64_t batch,
                               const AmpMode& amp) {
  alloc::CachingAllocator& allocator = alloc::cpu_allocator();
  const auto allocated = [&] { return allocator.stats().allocated_bytes.all().current; };
  const std::int64_t base = allocated();
  manual_seed(0);
  auto model = nn::make_model(model_name);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions{.enabled = amp.needs_scaler()});
  const Tensor x = randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  StepMemory m;
  for (int step = 0; step < 2; ++step) {
    sgd.zero_grad();
    const bool measured = step == 1;
    if (measured) {
      m.before = allocated() - base;
      allocator.reset_peak_memory_stats();
    }
    Tensor loss;
    {
      AutocastGuard autocast(kCPU, amp.dtype, amp.enabled());
      loss = cross_entropy(model->forward(x), y);
    }
    if (measured) m.activations = allocated() - base - m.before;
    scaler.scale(loss).backward();
    scaler.step(sgd);
    scaler.update();
    if (measured) m.peak = allocator.stats().allocated_bytes.all().peak - base;
  }
  return m;
}

std::int64_t measure_step_peak(nn::Module& model, std::int64_t batch) {
  optim::SGD sgd(model.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const auto step = [&](std::int64_t n) {
    const Tensor x = randn({n, 1, 28, 28});
    Tensor logits = model.forward(x);
    Tensor loss = cross_entropy(logits, randint(0, 10, {n}));
    logits = Tensor();
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  };
  step(1);
  alloc::CachingAllocator& allocator = alloc::cpu_allocator();
  allocator.empty_cache();
  allocator.reset_peak_memory_stats();
  try {
    step(batch);
  } catch (const OutOfMemoryError&) {
    return -1;
  }
  return allocator.stats().allocated_bytes.all().peak;
}

}  // namespace frugal::train
