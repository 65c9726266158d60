// Memory behaviour, asserted through the CPU caching allocator's stats: what survives a
// backward pass, what a no-grad forward holds, when backward frees saved tensors and
// gradients, and that a training loop's footprint is exactly flat.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "allocator/default_allocators.h"
#include "allocator/simulated_device.h"
#include "engine/frugal.h"
#include "engine/storage.h"

using namespace frugal;

namespace {

// Exact bytes requested by live tensors (before the allocator's 512-byte rounding).
std::int64_t requested_now() {
  return alloc::cpu_allocator().stats().requested_bytes.all().current;
}
std::int64_t requested_peak() { return alloc::cpu_allocator().stats().requested_bytes.all().peak; }

struct Mlp {
  std::vector<Tensor> weights, biases;
  Mlp(int layers, std::int64_t width, std::int64_t classes, Generator& gen) {
    for (int i = 0; i < layers; ++i) {
      const std::int64_t out = i + 1 == layers ? classes : width;
      weights.push_back(mul(randn({out, width}, {}, &gen), 0.1).requires_grad_());
      biases.push_back(zeros({out}).requires_grad_());
    }
  }
  Tensor forward(Tensor h) const {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      h = linear(h, weights[i], biases[i]);
      if (i + 1 < weights.size()) h = relu(h);
    }
    return h;
  }
  std::int64_t parameter_bytes() const {
    std::int64_t n = 0;
    for (const auto& w : weights) n += static_cast<std::int64_t>(w.nbytes());
    for (const auto& b : biases) n += static_cast<std::int64_t>(b.nbytes());
    return n;
  }
};

}  // namespace

TEST_CASE("after loss.backward() on a 10-layer network only parameters and gradients remain") {
  Generator gen(1);
  const Mlp net(10, 128, 128, gen);
  const Tensor x = randn({32, 128}, {}, &gen);
  const Tensor target = randint(0, 128, {32}, kInt64, &gen);
  const std::int64_t base = requested_now();  // parameters, input and target
  {
    Tensor logits = net.forward(x);
    Tensor loss = cross_entropy(logits, target);
    CHECK(requested_now() > base + 10 * 32 * 128 * 4);  // the graph holds the activations
    loss.backward();
    // Every saved activation is gone: besides the gradients only the two tensors still
    // held here (logits and loss) remain.
    CHECK(requested_now() == base + net.parameter_bytes() +
                                 static_cast<std::int64_t>(logits.nbytes() + loss.nbytes()));
  }
  CHECK(requested_now() == base + net.parameter_bytes());  // + gradients, one per parameter
  for (const auto& w : net.weights) CHECK(w.grad().defined());
}

TEST_CASE("a forward under NoGradGuard through 10 layers holds at most two activations") {
  Generator gen(2);
  const Mlp net(10, 256, 256, gen);
  const std::int64_t activation = 64 * 256 * 4;
  const std::int64_t base = requested_now();
  alloc::cpu_allocator().reset_peak_memory_stats();
  {
    NoGradGuard no_grad;
    Tensor out = net.forward(randn({64, 256}, {}, &gen));
    CHECK(out.sizes() == IntArrayRef{64, 256});
  }
  CHECK(requested_peak() - base <= 2 * activation);
  CHECK(requested_now() == base);
}

TEST_CASE("the same forward with autograd holds every activation it saved") {
  Generator gen(3);
  const Mlp net(10, 256, 256, gen);
  const std::int64_t activation = 64 * 256 * 4;
  const std::int64_t base = requested_now();
  Tensor out = net.forward(randn({64, 256}, {}, &gen));
  CHECK(requested_now() - base >= 10 * activation);  // the contrast NoGradGuard avoids
}

TEST_CASE("backward frees each node's saved tensors and each consumed gradient at once") {
  const std::int64_t n = 4096, bytes = n * 4;
  std::vector<std::int64_t> at_hook;
  Tensor loss;
  {
    Tensor h = randn({n}).requires_grad_();
    for (int i = 0; i < 10; ++i) {
      h = sigmoid(h);  // saves its output: one activation per layer
      h.register_hook([&at_hook](const Tensor&) {
        at_hook.push_back(requested_now());
        return Tensor();
      });
    }
    loss = h.sum();
  }  // only the graph holds the activations now
  loss.backward();
  REQUIRE(at_hook.size() == 10);
  // Between two consecutive layers exactly one activation (the saved output of the node
  // that just ran) was released, and the gradient it consumed was replaced by one of its
  // size. (The top layer's incoming gradient is sum's 4-byte expanded one, hence from 2.)
  for (std::size_t i = 2; i < at_hook.size(); ++i) CHECK(at_hook[i - 1] - at_hook[i] == bytes);
}

TEST_CASE("1000 training steps leave current allocated bytes exactly flat") {
  Generator gen(4);
  Tensor conv_w = mul(randn({4, 1, 3, 3}, {}, &gen), 0.3).requires_grad_();
  Tensor conv_b = zeros({4}).requires_grad_();
  Tensor fc_w = mul(randn({10, 4 * 4 * 4}, {}, &gen), 0.1).requires_grad_();
  Tensor fc_b = zeros({10}).requires_grad_();
  std::vector<Tensor*> params = {&conv_w, &conv_b, &fc_w, &fc_b};
  const Tensor x = randn({8, 1, 8, 8}, {}, &gen);
  const Tensor target = randint(0, 10, {8}, kInt64, &gen);
  auto& allocator = alloc::cpu_allocator();
  std::int64_t first = -1;
  bool flat = true;
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 1000; ++step) {
    Tensor h = conv2d(x, conv_w, conv_b, {1, 1}, {1, 1});
    h = max_pool2d(relu(h), {2, 2}).flatten(1);
    Tensor loss = cross_entropy(linear(h, fc_w, fc_b), target);
    (step == 0 ? first_loss : last_loss) = loss.item<float>();
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor* p : params) {
        p->sub_(p->grad(), 0.05);
        p->mutable_grad() = Tensor();  // zero_grad(set_to_none=true)
      }
    }
    h = Tensor();
    loss = Tensor();
    const std::int64_t now = allocator.stats().allocated_bytes.all().current;
    if (first < 0) first = now;
    flat = flat && now == first;
  }
  CHECK(flat);
  CHECK(allocator.stats().allocated_bytes.all().current == first);
  CHECK(last_loss < first_loss);  // it did train
}

TEST_CASE("max_pool2d keeps one byte per output, and only when a backward will need it") {
  const Tensor x = randn({8, 4, 16, 16});
  const std::int64_t out_bytes = 8 * 4 * 8 * 8 * 4;
  const std::int64_t base = requested_now();
  alloc::cpu_allocator().reset_peak_memory_stats();
  {
    NoGradGuard no_grad;
    Tensor y = max_pool2d(x, {2, 2});
    CHECK(requested_now() - base == out_bytes);
  }
  CHECK(requested_peak() - base == out_bytes);
  Tensor xg = x.detach().requires_grad_();
  Tensor y = max_pool2d(xg, {2, 2});
  CHECK(requested_now() - base == out_bytes + out_bytes / 4);  // + uint8 window indices
}

TEST_CASE(
    "a storage whose block cannot be freed (a broken device) warns instead of ending the process") {
  // After a kernel fault every CUDA call fails, including the event that orders the reuse of a
  // block another stream used. The storage's destructor must not throw that on (it would end the
  // process): here the events of a simulated device fail the same way.
  struct BrokenEvents : alloc::SimulatedDevice {
    using SimulatedDevice::SimulatedDevice;
    alloc::EventHandle record_event(alloc::StreamId) override {
      throw Error("cudaEventRecord failed: an illegal memory access was encountered");
    }
  };
  alloc::CachingAllocator allocator(std::make_shared<BrokenEvents>(std::size_t{64} << 20), {});
  bool destroyed = false;
  {
    auto storage = std::make_unique<StorageImpl>(4096, allocator, /*pinned=*/true);
    storage->record_stream(3);
    storage.reset();
    destroyed = true;
  }
  CHECK(destroyed);
}
