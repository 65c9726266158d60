// Dynamic int8 quantization: the uint8 x int8 GEMM exactly against a naive loop, DynamicLinear
// against the float Linear within the quantization error bound, its bytes through the
// allocator's counters, quantize_dynamic on the mlp, and the errors bad inputs raise.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/quantized_gemm.h"
#include "nn/nn.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {

std::int64_t requested_now() {
  return alloc::cpu_allocator().stats().requested_bytes.all().current;
}

// Same shape and the same bytes.
bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.sizes() == cb.sizes() && std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// C = A B^T with lda/ldb/ldc wider than the matrices, against a naive int64 loop, exactly.
void check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::mt19937& rng, bool extreme) {
  const std::int64_t lda = k + 3, ldb = k + 5, ldc = n + 2;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m * lda));
  std::vector<std::int8_t> b(static_cast<std::size_t>(n * ldb));
  std::uniform_int_distribution<int> du(0, 255), ds(-128, 127), coin(0, 1);
  for (auto& v : a) v = static_cast<std::uint8_t>(extreme ? 255 : du(rng));
  for (auto& v : b) v = static_cast<std::int8_t>(extreme ? (coin(rng) ? 127 : -128) : ds(rng));
  std::vector<std::int32_t> c(static_cast<std::size_t>(m * ldc), 12345);
  kernels::cpu::gemm_u8s8s32(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  std::int64_t mismatches = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t ref = 0;
      for (std::int64_t p = 0; p < k; ++p) ref += std::int64_t{a[i * lda + p]} * b[j * ldb + p];
      mismatches += c[i * ldc + j] != ref;
    }
    for (std::int64_t j = n; j < ldc; ++j) mismatches += c[i * ldc + j] != 12345;  // untouched
  }
  CHECK(mismatches == 0);

  // The fused rescale gives the float of those sums as its formula says (to float rounding: the
  // compiler may fuse a multiply and an add). Zero points only where a real input could have
  // them: sum_k (a - zp) b must fit int32 like the sums, which the extreme case leaves no room for.
  std::vector<float> xs(static_cast<std::size_t>(m)), ws(static_cast<std::size_t>(n)),
      bias(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(m * ldc));
  std::vector<std::int32_t> zp(static_cast<std::size_t>(m)), wsum(static_cast<std::size_t>(n));
  std::uniform_real_distribution<float> du01(0.001f, 0.1f);
  for (std::int64_t i = 0; i < m; ++i) {
    xs[i] = du01(rng);
    zp[i] = extreme ? 0 : du(rng);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    ws[j] = du01(rng);
    bias[j] = du01(rng);
    wsum[j] = 0;
    for (std::int64_t p = 0; p < k; ++p) wsum[j] += b[j * ldb + p];
  }
  kernels::cpu::quantized_linear_u8s8(m, n, k, a.data(), lda, b.data(), ldb, xs.data(), zp.data(),
                                      ws.data(), wsum.data(), bias.data(), y.data(), ldc);
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const double product =
          double{xs[i]} * ws[j] *
          static_cast<double>(std::int64_t{c[i * ldc + j]} - std::int64_t{zp[i]} * wsum[j]);
      differ +=
          std::fabs(y[i * ldc + j] - (product + bias[j])) > 1e-6 * (std::fabs(product) + bias[j]);
    }
  CHECK(differ == 0);
}

// Largest |y - y_ref| / bound over all elements, where bound is the worst-case error of the
// quantized product (see the test below) plus room for float rounding.
double worst_error_over_bound(const nn::Linear& linear, nn::quantized::DynamicLinear& q,
                              const Tensor& x) {
  const Tensor y = q.forward(x);
  Tensor y_ref;
  {
    NoGradGuard no_grad;
    y_ref = frugal::linear(x, linear.weight, linear.bias);
  }
  const Tensor w_hat = q.dequantized_weight();
  const std::int64_t rows = x.size(0), in = q.in_features, out = q.out_features;
  const float* xp = x.data_ptr<float>();
  const float* wp = w_hat.data_ptr<float>();
  const float* sw = q.weight_scale.data_ptr<float>();
  const float* yp = y.data_ptr<float>();
  const float* rp = y_ref.data_ptr<float>();
  double worst = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    double lo = 0, hi = 0, x_abs = 0;
    for (std::int64_t k = 0; k < in; ++k) {
      lo = std::min<double>(lo, xp[i * in + k]);
      hi = std::max<double>(hi, xp[i * in + k]);
      x_abs += std::fabs(xp[i * in + k]);
    }
    const double sx = (hi - lo) / 255;
    for (std::int64_t j = 0; j < out; ++j) {
      double w_abs = 0, xw_abs = 0;
      for (std::int64_t k = 0; k < in; ++k) {
        w_abs += std::fabs(wp[j * in + k]);
        xw_abs += std::fabs(xp[i * in + k] * wp[j * in + k]);
      }
      const double bound = sw[j] / 2 * x_abs + sx / 2 * w_abs + 1e-5 * xw_abs + 1e-6;
      worst = std::max(worst, std::fabs(double{yp[i * out + j]} - rp[i * out + j]) / bound);
    }
  }
  return worst;
}

// A Linear inside a container quantize_dynamic cannot rebuild.
struct Wrapper : nn::Module {
  Wrapper() : Module("Wrapper") { register_module("fc", std::make_shared<nn::Linear>(4, 4)); }
  Tensor forward(const Tensor& x) override { return children()[0]->forward(x); }
};

}  // namespace

TEST_CASE("gemm_u8s8s32 equals a naive integer loop exactly, and the fused rescale its formula") {
  std::mt19937 rng(7);
  check_gemm(37, 29, 131, rng, false);  // whole rows per thread (on up to 9 threads)
  check_gemm(1, 61, 784, rng, false);   // one row: the columns are split
  check_gemm(3, 5, 1, rng, false);
  check_gemm(130, 67, 300, rng, false);
  // The extremes (255 * 127 and 255 * -128 over the largest k allowed) do not overflow.
  check_gemm(2, 6, kernels::cpu::kMaxQuantizedGemmK, rng, true);
  std::vector<std::uint8_t> a(1);
  std::vector<std::int8_t> b(1);
  std::vector<std::int32_t> c(1);
  CHECK_THROWS_WITH(kernels::cpu::gemm_u8s8s32(1, 1, kernels::cpu::kMaxQuantizedGemmK + 1, a.data(),
                                               1, b.data(), 1, c.data(), 1),
                    Contains("overflow"));
}

TEST_CASE("DynamicLinear matches the float Linear within the quantization error bound") {
  // For each output y_ij = sum_k x_ik W_jk + b_j, quantizing gives x^ (|x - x^| <= sx_i / 2,
  // sx_i = (max(0, max x_i) - min(0, min x_i)) / 255) and W^ (|W - W^| <= sw_j / 2), so
  // |y - y^| <= sw_j / 2 * sum_k |x_ik| + sx_i / 2 * sum_k |W^_jk|. The integer sums are exact;
  // 1e-5 * sum |x W| + 1e-6 is room for float32 rounding of the rescale and both references.
  manual_seed(3);
  nn::Linear linear(300, 70);
  nn::quantized::DynamicLinear q(linear);
  const Tensor x = randn({200, 300});  // 200 rows: split between threads, several chunks each
  CHECK(worst_error_over_bound(linear, q, x) <= 1.0);
  const Tensor relu_like = relu(randn({5, 300}));  // non-negative rows: the zero point is 0
  CHECK(worst_error_over_bound(linear, q, relu_like) <= 1.0);
  const Tensor shifted = add(randn({5, 300}), -3.0);  // all-negative rows: zero point 255
  CHECK(worst_error_over_bound(linear, q, shifted) <= 1.0);
  CHECK(worst_error_over_bound(linear, q, zeros({3, 300})) <= 1.0);  // exactly the bias

  // Not a vacuous check: the typical error is small against the outputs themselves.
  const Tensor y = q.forward(x);
  Tensor y_ref;
  {
    NoGradGuard no_grad;
    y_ref = linear.forward(x);
  }
  const double rel = sub(y, y_ref).abs().mean().item<double>() / y_ref.abs().mean().item<double>();
  CHECK(rel > 0);
  CHECK(rel < 0.02);

  // Leading dims are kept, like Linear's; no bias works.
  nn::Linear no_bias(8, 3, false);
  nn::quantized::DynamicLinear qn(no_bias);
  CHECK(qn.forward(randn({2, 4, 8})).sizes() == IntArrayRef{2, 4, 3});
  CHECK(worst_error_over_bound(no_bias, qn, randn({6, 8})) <= 1.0);
}

TEST_CASE("DynamicLinear's weight takes a quarter of the float weight's bytes, plus scales") {
  manual_seed(4);
  nn::Linear linear(784, 512);
  const std::int64_t before = requested_now();
  std::int64_t held = 0;
  {
    nn::quantized::DynamicLinear q(linear);
    held = requested_now() - before;
    CHECK(q.weight.nbytes() * 4 == linear.weight.nbytes());
    // int8 weight + float32 scales + int32 row sums + float32 bias, and nothing else left.
    CHECK(held == 784 * 512 + 512 * 4 + 512 * 4 + 512 * 4);
    std::int64_t state_bytes = 0;
    for (const auto& [name, t] : q.state_dict())
      state_bytes += static_cast<std::int64_t>(t.nbytes());
    CHECK(state_bytes == held);
  }
  CHECK(requested_now() == before);
  // Against the float layer's weight and bias: 26.1% of it.
  const auto float_bytes = static_cast<std::int64_t>(linear.weight.nbytes() + linear.bias.nbytes());
  CHECK(static_cast<double>(held) / static_cast<double>(float_bytes) < 0.262);
}

TEST_CASE("quantize_dynamic on the mlp keeps the argmax of its logits on >= 99% of rows") {
  manual_seed(5);
  auto model = nn::make_model("mlp");
  model->eval();
  auto q = nn::quantized::quantize_dynamic(*model);
  REQUIRE(q->size() == model->size());
  std::int64_t linears = 0;
  for (std::size_t i = 0; i < q->size(); ++i) {
    const bool was_linear = dynamic_cast<nn::Linear*>((*model)[i].get()) != nullptr;
    linears += was_linear;
    CHECK((dynamic_cast<nn::quantized::DynamicLinear*>((*q)[i].get()) != nullptr) == was_linear);
    if (!was_linear) CHECK((*q)[i] == (*model)[i]);  // shared, not copied
    CHECK(q->named_children()[i].first == model->named_children()[i].first);
  }
  CHECK(linears == 3);
  CHECK_FALSE(q->is_training());
  // int8 weights, float32 scales, int32 row sums and float32 biases of 784-512-512-10.
  std::int64_t q_bytes = 0;
  for (const auto& [name, t] : q->state_dict()) q_bytes += static_cast<std::int64_t>(t.nbytes());
  CHECK(q_bytes == (784 * 512 + 512 * 512 + 512 * 10) + 3 * 4 * (512 + 512 + 10));

  const Tensor x = randn({2000, 1, 28, 28});
  Tensor float_logits, int8_logits;
  {
    InferenceMode inference;
    float_logits = model->forward(x);
    int8_logits = q->forward(x);
  }
  const double agree =
      eq(argmax(float_logits, 1), argmax(int8_logits, 1)).to(kFloat64).mean().item<double>();
  INFO("argmax agreement " << agree);
  CHECK(agree >= 0.99);

  // Dropping the float model gives its weights back: the quantized one holds none of them.
  const auto float_bytes = static_cast<std::int64_t>(model->parameter_count()) * 4;
  const std::int64_t before = requested_now();
  model.reset();
  CHECK(before - requested_now() == float_bytes);
  {
    InferenceMode inference;
    CHECK(same_bits(q->forward(x), int8_logits));  // shared children still work
  }

  // Nested Sequentials are rebuilt too; a Linear in another container is an error.
  nn::Sequential nested{
      std::make_shared<nn::Sequential>(
          std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(4, 4)}),
      std::make_shared<nn::ReLU>()};
  auto qn = nn::quantized::quantize_dynamic(nested);
  const auto* inner = dynamic_cast<nn::Sequential*>((*qn)[0].get());
  REQUIRE(inner != nullptr);
  CHECK(dynamic_cast<nn::quantized::DynamicLinear*>((*inner)[0].get()) != nullptr);
  nn::Sequential wrapped{std::make_shared<Wrapper>()};
  CHECK_THROWS_WITH(nn::quantized::quantize_dynamic(wrapped), Contains("'0.fc'"));
}

TEST_CASE("DynamicLinear gives the same bits at any thread count and batch split") {
  manual_seed(6);
  nn::Linear linear(100, 33);
  nn::quantized::DynamicLinear q(linear);
  const Tensor x = randn({301, 100});
  const int threads = kernels::cpu::get_num_threads();
  kernels::cpu::set_num_threads(1);
  const Tensor one = q.forward(x);
  kernels::cpu::set_num_threads(3);
  const Tensor three = q.forward(x);
  kernels::cpu::set_num_threads(threads);
  CHECK(same_bits(one, three));
  // Row by row (the small-batch path, the weight rows split between threads) as well.
  CHECK(same_bits(q.forward(x.narrow(0, 17, 2)), one.narrow(0, 17, 2)));
}

TEST_CASE("DynamicLinear refuses bad inputs with an error naming the layer") {
  nn::Linear linear(6, 3);
  nn::quantized::DynamicLinear q(linear);
  const auto layer = Contains("DynamicLinear(in_features=6, out_features=3)");
  CHECK_THROWS_AS(q.forward(randn({2, 5})), Error);
  CHECK_THROWS_WITH(q.forward(randn({2, 5})), layer && Contains("6"));
  CHECK_THROWS_WITH(q.forward(randn({2, 6}, kFloat64)), layer && Contains("float64"));
  CHECK_THROWS_WITH(q.forward(randint(0, 5, {2, 6})), layer && Contains("int64"));
  CHECK_THROWS_WITH(q.forward(Tensor()), layer);
  CHECK_THROWS_WITH(q.forward(randn({2, 6}, TensorOptions().requires_grad(true))),
                    layer && Contains("inference-only"));
  {
    NoGradGuard no_grad;  // the same input is fine without grad mode
    CHECK(q.forward(randn({2, 6}, TensorOptions().requires_grad(true))).sizes() ==
          IntArrayRef{2, 3});
  }
  Tensor bad = randn({2, 6});
  bad.data_ptr<float>()[7] = std::nanf("");
  CHECK_THROWS_WITH(q.forward(bad), layer && Contains("row 1") && Contains("non-finite"));
  Tensor bad_big = randn({300, 6});  // rows split between threads: raised after the region
  bad_big.data_ptr<float>()[250 * 6 + 2] = INFINITY;
  CHECK_THROWS_WITH(q.forward(bad_big), layer && Contains("row 250"));
  nn::Linear nan_weight(6, 3);
  nan_weight.weight.data_ptr<float>()[8] = std::nanf("");  // row 1 of [3, 6]
  CHECK_THROWS_WITH(nn::quantized::DynamicLinear(nan_weight), Contains("row 1") && Contains("NaN"));
  CHECK(q.forward(randn({0, 6})).sizes() == IntArrayRef{0, 3});

  nn::Linear wide(6, 3);
  wide.to(kFloat64);
  CHECK_THROWS_WITH(nn::quantized::DynamicLinear(wide), Contains("float64"));
  if (cuda::is_available()) {
    CHECK_THROWS_WITH(q.forward(randn({2, 6}).cuda()), layer && Contains("CPU only"));
    nn::Linear on_gpu(6, 3);
    on_gpu.to(Device(kCUDA));
    CHECK_THROWS_WITH(nn::quantized::DynamicLinear(on_gpu), Contains("CPU only"));
  }
}
