// Pruning: which entries and slices the prune functions zero (exact counts, smallest first,
// ties by position), that they stay zero under SGD and AdamW, remove()'s freed mask bytes,
// shrink_pruned_units' same logits in fewer bytes, and the errors bad inputs raise.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "allocator/default_allocators.h"
#include "nn/nn.h"

using namespace frugal;
using namespace frugal::nn::utils;
using Catch::Matchers::Contains;

namespace {

std::int64_t requested_now() {
  return alloc::cpu_allocator().stats().requested_bytes.all().current;
}

std::vector<float> values_of(const Tensor& t) {
  const Tensor c = t.detach().contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

void set_values(Tensor& t, const std::vector<float>& v) {
  NoGradGuard no_grad;
  t.copy_(tensor(v, t.sizes()));
}

std::int64_t zeros_in(const Tensor& t) {
  const std::vector<float> v = values_of(t);
  return std::count(v.begin(), v.end(), 0.0f);
}

std::int64_t parameter_bytes(const nn::Module& m) {
  std::int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += static_cast<std::int64_t>(p.nbytes());
  return n;
}

// A 7x10 weight whose entries have the distinct magnitudes 1..70 in a scrambled order, signs
// alternating.
std::vector<float> scrambled_weight() {
  std::vector<float> v(70);
  for (int i = 0; i < 70; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>((i * 29) % 70 + 1) * (i % 2 ? -1.f : 1.f);
  return v;
}

}  // namespace

TEST_CASE("l1_unstructured zeroes exactly round(amount * numel) of the smallest magnitudes") {
  nn::Linear layer(10, 7);
  set_values(layer.weight, scrambled_weight());
  REQUIRE_FALSE(prune::is_pruned(layer));
  prune::l1_unstructured(layer, "weight", 0.3);  // 21 of 70
  REQUIRE(prune::is_pruned(layer));
  CHECK(prune::pruned_count(layer, "weight") == 21);
  CHECK(prune::pruned_count(layer, "bias") == 0);
  const std::vector<float> after = values_of(layer.weight), before = scrambled_weight();
  for (std::size_t i = 0; i < 70; ++i) {
    // Magnitudes 1..21 are the smallest 21: exactly those are zero, the rest unchanged.
    if (std::abs(before[i]) <= 21)
      CHECK(after[i] == 0.0f);
    else
      CHECK(after[i] == before[i]);
  }
  // Pruning again keeps the earlier zeros and reaches the new total: 80% of 70 = 56.
  prune::l1_unstructured(layer, "weight", 0.8);
  CHECK(zeros_in(layer.weight) == 56);
  const std::vector<float> again = values_of(layer.weight);
  for (std::size_t i = 0; i < 70; ++i) CHECK((again[i] == 0.0f) == (std::abs(before[i]) <= 56));
  prune::l1_unstructured(layer, "weight", 0.0);  // a smaller amount un-prunes nothing
  CHECK(zeros_in(layer.weight) == 56);
  prune::l1_unstructured(layer, "weight", 1.0);
  CHECK(zeros_in(layer.weight) == 70);
}

TEST_CASE("l1_unstructured breaks ties in magnitude by position: the lower flat index goes first") {
  nn::Linear layer(4, 3, /*bias=*/false);
  set_values(layer.weight, {1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1});
  prune::l1_unstructured(layer, "weight", 0.25);  // 3 of 12
  CHECK(values_of(layer.weight) == std::vector<float>{0, 0, 0, -1, 1, -1, 1, -1, 1, -1, 1, -1});
}

TEST_CASE("pruned entries stay exactly zero through SGD (momentum, weight decay) and AdamW") {
  for (int optimizer = 0; optimizer < 2; ++optimizer) {
    manual_seed(3);
    nn::Linear layer(16, 8);
    prune::l1_unstructured(layer, "weight", 0.6);
    prune::ln_structured(layer, "bias", 0.5, 1, 0);
    const std::vector<float> start = values_of(layer.weight);
    std::unique_ptr<optim::Optimizer> opt;
    if (optimizer == 0)
      opt = std::make_unique<optim::SGD>(layer.parameters(),
                                         optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
    else
      opt = std::make_unique<optim::AdamW>(layer.parameters(),
                                           optim::AdamWOptions(0.01).weight_decay(0.1));
    for (int step = 0; step < 5; ++step) {
      opt->zero_grad();
      const Tensor x = randn({32, 16});
      layer.forward(x).pow(2).mean().backward();
      const std::vector<float> g = values_of(layer.weight.grad());
      for (std::size_t i = 0; i < g.size(); ++i)
        if (start[i] == 0.0f) REQUIRE(g[i] == 0.0f);
      opt->step();
    }
    const std::vector<float> end = values_of(layer.weight);
    std::int64_t moved = 0;
    for (std::size_t i = 0; i < end.size(); ++i) {
      if (start[i] == 0.0f)
        CHECK(end[i] == 0.0f);
      else
        moved += end[i] != start[i];
    }
    CHECK(moved == 128 - 77);  // every kept entry trained (round(0.6 * 128) = 77 pruned)
    CHECK(zeros_in(layer.bias) == 4);
  }
}

TEST_CASE("ln_structured zeroes whole slices with the smallest L_n norms") {
  nn::Linear layer(3, 5, /*bias=*/false);
  // Row L2 norms: 5, 1, 13, 2, 3; row L1 norms: 7, 1, 17, 2, 3; column 2 is the largest by far.
  set_values(layer.weight, {3, 0, 4, 1, 0, 0, 5, 0, 12, 0, 0, 2, 0, 0, 3});
  prune::ln_structured(layer, "weight", 0.4, 2, 0);  // 2 of 5 rows: rows 1 and 3
  CHECK(values_of(layer.weight) ==
        std::vector<float>{3, 0, 4, 0, 0, 0, 5, 0, 12, 0, 0, 0, 0, 0, 3});
  prune::ln_structured(layer, "weight", 0.6, 1, 0);  // 3 rows in all: row 4 next
  CHECK(values_of(layer.weight) ==
        std::vector<float>{3, 0, 4, 0, 0, 0, 5, 0, 12, 0, 0, 0, 0, 0, 0});
  CHECK(prune::pruned_count(layer, "weight") == 9);

  nn::Linear columns(3, 2, false);
  set_values(columns.weight, {1, -9, 2, 3, 1, -2});  // column max norms: 3, 9, 2
  prune::ln_structured(columns, "weight", 0.34, std::numeric_limits<double>::infinity(), -1);
  CHECK(values_of(columns.weight) == std::vector<float>{1, -9, 0, 3, 1, 0});

  manual_seed(1);
  nn::Conv2d conv(4, 6, 3);
  prune::ln_structured(conv, "weight", 0.5, 2, 0);  // 3 whole output channels of 4*3*3
  const std::vector<float> w = values_of(conv.weight);
  int zero_channels = 0;
  for (int c = 0; c < 6; ++c) {
    const auto first = w.begin() + c * 36;
    const auto zeros = std::count(first, first + 36, 0.0f);
    CHECK((zeros == 0 || zeros == 36));
    zero_channels += zeros == 36;
  }
  CHECK(zero_channels == 3);
}

TEST_CASE("global_unstructured ranks the entries of all the listed parameters together") {
  manual_seed(2);
  nn::Linear small(10, 10), large(10, 10);
  {
    NoGradGuard no_grad;
    small.weight.mul_(0.001);  // all of small's weight is below all of large's
    large.weight.add_(10.0);
  }
  prune::global_unstructured({{&small, "weight"}, {&large, "weight"}}, 0.6);  // 120 of 200
  CHECK(zeros_in(small.weight) == 100);
  CHECK(zeros_in(large.weight) == 20);
  CHECK(prune::pruned_count(large, "weight") == 20);
  CHECK(prune::is_pruned(small));
  CHECK_FALSE(prune::is_pruned(nn::Linear(2, 2)));
}

TEST_CASE("remove keeps the zeros, frees the mask's bytes and stops masking the gradient") {
  manual_seed(4);
  auto model = nn::mlp();
  auto& first = static_cast<nn::Linear&>(*(*model)[1]);
  const std::int64_t before = requested_now();
  prune::l1_unstructured(first, "weight", 0.5);
  const std::int64_t with_mask = requested_now();
  CHECK(with_mask - before == static_cast<std::int64_t>(first.weight.nbytes()));  // a float32 mask
  CHECK(prune::is_pruned(*model));  // a child's parameter counts
  const std::vector<float> pruned = values_of(first.weight);
  prune::remove(first, "weight");
  CHECK(requested_now() == before);
  CHECK_FALSE(prune::is_pruned(*model));
  CHECK(values_of(first.weight) == pruned);
  CHECK(zeros_in(first.weight) == 784 * 512 / 2);
  // The gradient is no longer masked: pruned entries get gradients again.
  model->forward(randn({8, 1, 28, 28})).pow(2).sum().backward();
  const std::vector<float> g = values_of(first.weight.grad());
  std::int64_t revived = 0;
  for (std::size_t i = 0; i < g.size(); ++i) revived += pruned[i] == 0.0f && g[i] != 0.0f;
  CHECK(revived > 0);
  CHECK_THROWS_WITH(prune::remove(first, "weight"), Contains("'weight' of Linear is not pruned"));
}

TEST_CASE("a mask goes with its parameter: dropping a pruned model frees the mask too") {
  const std::int64_t before = requested_now();
  {
    auto layer = std::make_shared<nn::Linear>(64, 32);
    prune::l1_unstructured(*layer, "weight", 0.5);
    CHECK(requested_now() > before);
  }
  CHECK(requested_now() == before);
}

TEST_CASE("shrink_pruned_units removes zeroed hidden units: same logits, fewer bytes") {
  manual_seed(5);
  const Tensor x = randn({16, 1, 6, 5});
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Flatten>());
  model->push_back(std::make_shared<nn::Linear>(30, 16));
  model->push_back(std::make_shared<nn::ReLU>(true));
  model->push_back(std::make_shared<nn::Linear>(16, 12));
  model->push_back(std::make_shared<nn::Linear>(12, 10));  // no ReLU: a plain affine fold
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(10, 4));
  auto& l1 = static_cast<nn::Linear&>(*(*model)[1]);
  auto& l3 = static_cast<nn::Linear&>(*(*model)[3]);
  auto& l4 = static_cast<nn::Linear&>(*(*model)[4]);
  {
    NoGradGuard no_grad;  // positive biases, so that the fold into the next bias is exercised
    l1.bias.fill_(0.3);
    l3.bias.fill_(-0.2);
  }
  prune::ln_structured(l1, "weight", 0.5, 2, 0);   // 8 of 16 units
  prune::ln_structured(l3, "weight", 0.25, 1, 0);  // 3 of 12
  prune::ln_structured(l4, "weight", 0.3, 2, 0);   // 3 of 10
  for (auto* m : {&l1, &l3, &l4}) prune::remove(*m, "weight");
  Tensor reference;
  {
    NoGradGuard no_grad;
    reference = model->forward(x);
  }
  const std::int64_t dense_bytes = parameter_bytes(*model);
  const std::int64_t held = requested_now();
  auto shrunk = prune::shrink_pruned_units(*model);
  REQUIRE(shrunk->size() == model->size());
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[1]).out_features == 8);
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[3]).in_features == 8);
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[3]).out_features == 9);
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[4]).out_features == 7);
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[6]).in_features == 7);
  CHECK((*shrunk)[0] == (*model)[0]);  // unchanged children are shared
  {
    NoGradGuard no_grad;
    const std::vector<float> a = values_of(reference), b = values_of(shrunk->forward(x));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-5f);
  }
  const std::int64_t shrunk_bytes = parameter_bytes(*shrunk);
  CHECK(shrunk_bytes == 4 * ((30 * 8 + 8) + (8 * 9 + 9) + (9 * 7 + 7) + (7 * 4 + 4)));
  CHECK(shrunk_bytes < dense_bytes);
  // The allocator agrees: dropping the dense model returns the difference.
  model.reset();
  CHECK(held - requested_now() == dense_bytes - shrunk_bytes);
}

namespace {

// 1 for each output channel of `conv` with a nonzero filter, 0 for the zeroed ones.
Tensor live_channels(const nn::Conv2d& conv) {
  const std::vector<float> w = values_of(conv.weight);
  const std::int64_t channels = conv.options.out_channels_;
  const auto slice = static_cast<std::size_t>(conv.weight.numel() / channels);
  std::vector<float> live;
  for (std::size_t c = 0; c < static_cast<std::size_t>(channels); ++c)
    live.push_back(std::all_of(w.begin() + c * slice, w.begin() + (c + 1) * slice,
                               [](float v) { return v == 0.0f; })
                       ? 0.0f
                       : 1.0f);
  return tensor(live);
}

std::int64_t state_bytes(const nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& [name, t] : m.state_dict()) n += static_cast<std::int64_t>(t.nbytes());
  return n;
}

}  // namespace

TEST_CASE("shrink_pruned_units removes the cnn's zeroed channels with their batch norm entries") {
  manual_seed(6);
  const Tensor x = randn({4, 1, 28, 28});
  auto model = nn::cnn();  // conv, bn, conv, bn, pool, conv, bn, conv, bn, pool, flatten, ...
  for (std::size_t c : {0, 2, 5, 7}) {
    auto& conv = static_cast<nn::Conv2d&>(*(*model)[c]);
    auto& bn = static_cast<nn::BatchNorm2d&>(*(*model)[c + 1]);
    {
      NoGradGuard no_grad;  // statistics and shifts that make every channel's output differ
      bn.running_mean.copy_(randn({bn.options.num_features_}));
      bn.running_var.copy_(rand({bn.options.num_features_}).add_(0.5));
      bn.bias.copy_(randn({bn.options.num_features_}).mul_(0.1));
    }
    prune::ln_structured(conv, "weight", 0.5, 1, 0);
    const Tensor live = live_channels(conv);
    prune::custom_from_mask(bn, "weight", live);
    prune::custom_from_mask(bn, "bias", live);
    for (auto [m, name] :
         {std::pair<nn::Module*, const char*>{&conv, "weight"}, {&bn, "weight"}, {&bn, "bias"}})
      prune::remove(*m, name);
  }
  model->eval();
  Tensor reference_eval;
  {
    NoGradGuard no_grad;
    reference_eval = model->forward(x);
  }
  const std::int64_t dense_bytes = state_bytes(*model);
  const std::int64_t held = requested_now();
  auto shrunk = prune::shrink_pruned_units(*model);
  CHECK(static_cast<nn::Conv2d&>(*(*shrunk)[0]).options.out_channels_ == 16);
  CHECK(static_cast<nn::BatchNorm2d&>(*(*shrunk)[1]).options.num_features_ == 16);
  CHECK(static_cast<nn::Conv2d&>(*(*shrunk)[2]).options.in_channels_ == 16);
  CHECK(static_cast<nn::Conv2d&>(*(*shrunk)[7]).options.out_channels_ == 32);
  CHECK(static_cast<nn::Linear&>(*(*shrunk)[11]).in_features == 32 * 7 * 7);
  CHECK((*shrunk)[4] == (*model)[4]);  // the pooling layers are shared
  CHECK_FALSE(shrunk->is_training());
  auto close = [](const Tensor& a, const Tensor& b) {
    const std::vector<float> va = values_of(a), vb = values_of(b);
    REQUIRE(va.size() == vb.size());
    float worst = 0;
    for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
    return worst;
  };
  {
    NoGradGuard no_grad;
    CHECK(close(reference_eval, shrunk->forward(x)) <= 1e-5f);
    // Training mode (batch statistics): the removed channels were exactly 0 there too.
    model->train();
    shrunk->train();
    const Tensor reference_train = model->forward(x);
    CHECK(close(reference_train, shrunk->forward(x)) <= 1e-5f);
  }
  const std::int64_t shrunk_bytes = state_bytes(*shrunk);
  // Filters, 4 batch-norm vectors (+ the int64 counter), the Linear's columns of removed channels.
  const std::int64_t expected = 4 * (16 * 1 * 9 + 16 * 16 * 9 + 32 * 16 * 9 + 32 * 32 * 9) +
                                4 * 4 * (16 + 16 + 32 + 32) + 4 * 8 +
                                4 * (32 * 49 * 128 + 128 + 128 * 10 + 10);
  CHECK(shrunk_bytes == expected);
  model.reset();
  CHECK(held - requested_now() == dense_bytes - shrunk_bytes);
}

TEST_CASE("shrink_pruned_units keeps a zeroed channel whose batch norm still shifts it") {
  manual_seed(7);
  auto model = nn::cnn();
  auto& conv = static_cast<nn::Conv2d&>(*(*model)[0]);
  {
    NoGradGuard no_grad;
    static_cast<nn::BatchNorm2d&>(*(*model)[1]).bias.fill_(0.5);  // relu(0.5) != 0
  }
  prune::ln_structured(conv, "weight", 0.5, 2, 0);
  prune::remove(conv, "weight");
  auto shrunk = prune::shrink_pruned_units(*model);
  CHECK(static_cast<nn::Conv2d&>(*(*shrunk)[0]).options.out_channels_ == 32);
  for (std::size_t i = 0; i < model->size(); ++i) CHECK((*shrunk)[i] == (*model)[i]);
}

TEST_CASE("prune functions refuse bad inputs with an error naming what was wrong") {
  nn::Linear layer(4, 3);
  CHECK_THROWS_WITH(prune::l1_unstructured(layer, "weight", -0.1),
                    Contains("amount must be a fraction in [0, 1]"));
  CHECK_THROWS_WITH(prune::l1_unstructured(layer, "weight", 1.5), Contains("got 1.5"));
  CHECK_THROWS_WITH(prune::l1_unstructured(layer, "weight", std::nan("")),
                    Contains("amount must be"));
  CHECK_THROWS_WITH(
      prune::l1_unstructured(layer, "wieght", 0.5),
      Contains("Linear has no parameter 'wieght' (its own parameters: weight, bias)"));
  CHECK_THROWS_WITH(prune::ln_structured(layer, "weight", 0.5, 2, 2),
                    Contains("dim 2 is out of range for parameter 'weight' of Linear"));
  CHECK_THROWS_WITH(prune::ln_structured(layer, "weight", 0.5, 2, -3), Contains("dim -3"));
  CHECK_THROWS_WITH(prune::ln_structured(layer, "weight", 0.5, 0, 0),
                    Contains("order n must be positive"));
  CHECK_THROWS_WITH(prune::global_unstructured({}, 0.5), Contains("no parameters"));
  CHECK_THROWS_WITH(prune::global_unstructured({{&layer, "weight"}, {&layer, "weight"}}, 0.5),
                    Contains("listed twice"));
  CHECK_THROWS_WITH(prune::remove(layer, "bias"), Contains("'bias' of Linear is not pruned"));
  auto model = nn::mlp();
  CHECK_THROWS_WITH(prune::l1_unstructured(*model, "1.weight", 0.5),
                    Contains("Sequential has no parameter '1.weight' (its own parameters: none)"));
  CHECK_THROWS_WITH(prune::custom_from_mask(layer, "weight", ones({4, 3})),
                    Contains("must have its shape [3, 4], got [4, 3]"));
  CHECK_FALSE(prune::is_pruned(layer));  // nothing was pruned by the failed calls
}
