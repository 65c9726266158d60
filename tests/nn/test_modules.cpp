// Modules: registration and naming, train/eval, to(dtype), state_dict round trips and their
// errors, PyTorch's default initialisation bounds, each layer's forward against the op or a
// hand computation and its gradients against finite differences, and the three models.
#include <catch2/catch.hpp>

#include <cmath>

#include "../engine/gradcheck.h"
#include "allocator/cuda_device.h"
#include "nn/nn.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {

double at(const Tensor& t, std::int64_t i) {
  return t.to(kFloat64).contiguous().data_ptr<double>()[i];
}

bool all_close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  return a.sizes() == b.sizes() &&
         abs(sub(a.to(kFloat64), b.to(kFloat64))).max().item<double>() <= tol;
}

// gradcheck of a module's forward with respect to its input and every parameter, in float64.
void check_module_gradients(nn::Module& m, const Tensor& input) {
  m.to(kFloat64);
  std::vector<Tensor> inputs{input.to(kFloat64).detach().requires_grad_()};
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  const std::string report = frugal::testing::gradcheck(
      [&m](const std::vector<Tensor>& x) { return m.forward(x[0]); }, inputs);
  INFO(m.name() << ": " << report);
  CHECK(report.empty());
}

}  // namespace

TEST_CASE("named parameters and buffers follow the module tree") {
  auto net = nn::cnn();
  const auto params = net->named_parameters();
  REQUIRE(params.size() ==
          16);  // 4 conv weights, 4 batch norms (weight, bias), 2 linear (weight, bias)
  CHECK(params[0].first == "0.weight");
  CHECK(params[1].first == "1.weight");
  CHECK(params[2].first == "1.bias");
  CHECK(net->named_buffers()[0].first == "1.running_mean");
  CHECK(net->named_buffers()[2].first == "1.num_batches_tracked");
  // 32*9 + 32*32*9 + 32*64*9 + 64*64*9 conv, 2*(32+32+64+64) BN, 3136*128+128 + 128*10+10 linear
  CHECK(net->parameter_count() == 288 + 9216 + 18432 + 36864 + 384 + 401536 + 1290);
  for (const Tensor& p : net->parameters()) CHECK(p.requires_grad());
  CHECK_THAT(nn::describe(*net), Contains("(0): Conv2d(1, 32, kernel_size=(3, 3)") &&
                                     Contains("bias=false") && Contains("fused_relu=true") &&
                                     Contains("(11): Linear(in_features=3136"));
}

TEST_CASE("the three models map a batch of images to 10 logits") {
  for (const std::string& name : nn::model_names()) {
    auto m = nn::make_model(name);
    Tensor out = m->forward(randn({2, 1, 28, 28}));
    CHECK(out.sizes() == IntArrayRef{2, 10});
    INFO(name);
  }
  CHECK(nn::mobilenet()->parameter_count() ==
        (288 + 64) + (288 + 64) + (32 * 64 + 128) + (576 + 128) + (64 * 128 + 256) + (1152 + 256) +
            (128 * 128 + 256) + (1152 + 256) + (128 * 256 + 512) + (2560 + 10));
  CHECK(nn::mlp()->parameter_count() == 784 * 512 + 512 + 512 * 512 + 512 + 5120 + 10);
  CHECK_THROWS_WITH(nn::make_model("resnet"), Contains("resnet") && Contains("cnn"));
}

TEST_CASE("the models take the channels, size and classes of the data they are given") {
  const nn::ModelInput rgb{3, 64, 48, 5};
  for (const std::string& name : nn::model_names()) {
    INFO(name);
    auto m = nn::make_model(name, rgb);
    CHECK(m->forward(randn({2, 3, 64, 48})).sizes() == IntArrayRef{2, 5});
  }
  // cnn: the first conv takes 3 channels (2 x 9 x 32 more weights), the classifier keeps its
  // 7x7 input (the map is averaged down from 16x12), the last layer gives 5 classes.
  const std::int64_t gray = nn::cnn()->parameter_count();
  CHECK(nn::cnn(rgb)->parameter_count() == gray + 2 * 9 * 32 - 5 * 129);
  // Smaller than 28: the classifier takes the smaller map as it is.
  CHECK(nn::cnn({1, 16, 16, 10})->forward(randn({1, 1, 16, 16})).sizes() == IntArrayRef{1, 10});
  CHECK(nn::mlp({3, 8, 8, 10})->parameter_count() == 192 * 512 + 512 + 512 * 512 + 512 + 5120 + 10);
  CHECK_THROWS_WITH(nn::cnn({1, 3, 3, 10}), Contains("3x3") && Contains("too small"));
  CHECK_THROWS_WITH(nn::make_model("mlp", {0, 8, 8, 10}), Contains("channel"));
  CHECK_THROWS_WITH(nn::make_model("mobilenet", {1, 8, 8, 1}), Contains("2 classes"));
}

TEST_CASE("default initialisation follows PyTorch's bounds") {
  manual_seed(0);
  nn::Linear fc(400, 50);
  const double bound = 1 / std::sqrt(400.0);
  CHECK(fc.weight.abs().max().item<float>() <= bound);
  CHECK(fc.weight.abs().max().item<float>() > 0.9 * bound);
  CHECK(fc.bias.abs().max().item<float>() <= bound);
  nn::Conv2d conv(nn::Conv2dOptions(8, 16, 3).groups(2));
  const double cbound = 1 / std::sqrt(4.0 * 9.0);
  CHECK(conv.weight.sizes() == IntArrayRef{16, 4, 3, 3});
  CHECK(conv.weight.abs().max().item<float>() <= cbound);
  CHECK(conv.weight.abs().max().item<float>() > 0.9 * cbound);
  nn::BatchNorm2d bn(5);
  CHECK(bn.weight.sum().item<float>() == 5);
  CHECK(bn.bias.sum().item<float>() == 0);
  CHECK(bn.running_var.sum().item<float>() == 5);
}

TEST_CASE("layer forwards equal their ops or hand computations") {
  manual_seed(1);
  nn::Linear fc(3, 2);
  {
    NoGradGuard no_grad;
    fc.weight.copy_(tensor({1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 1.0f}).view({2, 3}));
    fc.bias.copy_(tensor({0.5f, -0.5f}));
  }
  Tensor y = fc(tensor({1.0f, 1.0f, 2.0f}).view({1, 3}));
  CHECK(at(y, 0) == Approx(1 + 2 + 6 + 0.5));
  CHECK(at(y, 1) == Approx(-1 + 0 + 2 - 0.5));
  nn::ReLU relu_in_place(true);
  Tensor x = tensor({-1.0f, 2.0f});
  relu_in_place(x);
  CHECK(at(x, 0) == 0);  // overwritten
  nn::MaxPool2d mp(2);
  CHECK(at(mp(arange(16, kFloat32).view({1, 1, 4, 4})), 0) == 5);
  nn::AvgPool2d ap(2);
  CHECK(at(ap(arange(16, kFloat32).view({1, 1, 4, 4})), 0) == 2.5);
  nn::AdaptiveAvgPool2d gap(1);
  CHECK(gap(ones({2, 3, 5, 5})).sizes() == IntArrayRef{2, 3, 1, 1});
  nn::Flatten flat;
  CHECK(flat(ones({2, 3, 4, 5})).sizes() == IntArrayRef{2, 60});
  nn::Dropout drop(0.5);
  drop.eval();
  Tensor d = ones({100});
  CHECK(drop(d).is_alias_of(d));
  drop.train();
  CHECK(drop(d).sum().item<float>() != 100);
  nn::CrossEntropyLoss loss;
  Tensor logits = zeros({2, 4});
  CHECK(at(loss(logits, tensor(std::vector<std::int64_t>{1, 3})), 0) == Approx(std::log(4.0)));
}

TEST_CASE("layer gradients pass gradcheck") {
  manual_seed(2);
  nn::Linear fc(3, 4);
  check_module_gradients(fc, randn({5, 3}));
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding(1).stride(2));
  check_module_gradients(conv, randn({2, 2, 5, 5}));
  nn::Conv2d depthwise(nn::Conv2dOptions(3, 3, 3).padding(1).groups(3).bias(false));
  check_module_gradients(depthwise, randn({2, 3, 4, 4}));
  nn::BatchNorm2d bn(3);
  check_module_gradients(bn, randn({4, 3, 2, 2}));
  nn::BatchNorm2d bn_relu(nn::BatchNormOptions(3).fused_relu(true));
  check_module_gradients(bn_relu, randn({4, 3, 2, 2}));
  nn::Sequential seq{std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 2, 3).padding(1)),
                     std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions(2).fused_relu(true)),
                     std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(8, 3)};
  check_module_gradients(seq, randn({2, 1, 4, 4}));
}

TEST_CASE("BatchNorm2d moves running statistics in training and uses them in eval") {
  nn::BatchNorm2d bn(2);
  Tensor x = add(mul(randn({8, 2, 3, 3}), 3.0), 1.0);
  bn(x);
  CHECK(bn.num_batches_tracked.item<std::int64_t>() == 1);
  CHECK(at(bn.running_mean, 0) == Approx(0.1 * at(mean(x, {0, 2, 3}), 0)).epsilon(1e-4));
  bn.eval();
  Tensor y = bn(x);
  CHECK(bn.num_batches_tracked.item<std::int64_t>() == 1);
  const double expect =
      (at(x, 0) - at(bn.running_mean, 0)) / std::sqrt(at(bn.running_var, 0) + 1e-5);
  CHECK(at(y, 0) == Approx(expect).epsilon(1e-4));
  nn::BatchNorm2d cumulative(nn::BatchNormOptions(2).momentum(std::nullopt));
  cumulative(x);
  cumulative(mul(x, 2.0));
  // momentum None: the running mean is the plain average of the two batch means.
  CHECK(at(cumulative.running_mean, 1) == Approx(1.5 * at(mean(x, {0, 2, 3}), 1)).epsilon(1e-4));
  CHECK_THROWS_WITH(bn(ones({2, 3, 4, 4})), Contains("2 channels"));
}

TEST_CASE("state_dict round trip, and errors that name every mismatch without modifying") {
  manual_seed(3);
  auto a = nn::cnn();
  manual_seed(4);
  auto b = nn::cnn();
  CHECK_FALSE(all_close(a->named_parameters()[0].second, b->named_parameters()[0].second));
  b->load_state_dict(a->state_dict());
  const auto sa = a->state_dict(), sb = b->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    CHECK(sa[i].first == sb[i].first);
    CHECK(all_close(sa[i].second, sb[i].second, 0));
    CHECK_FALSE(sa[i].second.is_alias_of(sb[i].second));  // copied, not shared
  }
  auto bad = a->state_dict();
  bad.erase(bad.begin());
  bad.emplace_back("extra.weight", ones({1}));
  bad[0].second = ones({7});
  auto c = nn::cnn();
  const Tensor before = c->named_parameters()[1].second.clone();
  CHECK_THROWS_WITH(c->load_state_dict(bad), Contains("missing '0.weight'") &&
                                                 Contains("unexpected 'extra.weight'") &&
                                                 Contains("'1.weight'") && Contains("[7]"));
  CHECK(all_close(c->named_parameters()[1].second, before, 0));  // nothing was modified
}

TEST_CASE("to(dtype) converts floating parameters and buffers, keeps integer buffers") {
  auto net = nn::cnn();
  net->to(kFloat64);
  for (const Tensor& p : net->parameters()) {
    CHECK(p.dtype() == kFloat64);
    CHECK(p.requires_grad());
  }
  auto* bn = dynamic_cast<nn::BatchNorm2d*>((*net)[1].get());
  REQUIRE(bn != nullptr);
  CHECK(bn->running_mean.dtype() == kFloat64);
  CHECK(bn->num_batches_tracked.dtype() == kInt64);
  CHECK(net->forward(randn({1, 1, 28, 28}, kFloat64)).dtype() == kFloat64);
  // Without a usable GPU, moving to one is a clear error (tests/cuda covers the move itself).
  if (!cuda::is_available()) CHECK_THROWS_WITH(net->to(Device(kCUDA)), Contains("CUDA"));
}

TEST_CASE("train and eval reach every child; zero_grad frees or zeroes gradients") {
  auto net = nn::cnn();
  net->eval();
  for (const auto& c : net->children()) CHECK_FALSE(c->is_training());
  net->train();
  CHECK((*net)[1]->is_training());
  cross_entropy(net->forward(randn({2, 1, 28, 28})), tensor(std::vector<std::int64_t>{1, 2}))
      .backward();
  CHECK(net->parameters()[0].grad().defined());
  net->zero_grad(false);
  CHECK(net->parameters()[0].grad().abs().sum().item<float>() == 0);
  net->zero_grad();
  CHECK_FALSE(net->parameters()[0].grad().defined());
}
