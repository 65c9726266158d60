// The CUDA elementwise kernels against their CPU reference: every unary, binary and compare
// op, contiguous, broadcast (stride 0) and transposed operands, where, fill and casts.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using frugal::test::DeviceBuffer;
using frugal::test::random_values;
using frugal::test::require_close;
namespace cpu = frugal::kernels::cpu;
namespace gpu = frugal::kernels::cuda;

namespace {

// How an operand lies over a [rows, cols] loop.
enum class Layout { Dense, Transposed, RowBroadcast, Scalar };

std::size_t storage_size(Layout l, std::int64_t rows, std::int64_t cols) {
  switch (l) {
    case Layout::Dense:
    case Layout::Transposed:
      return static_cast<std::size_t>(rows * cols);
    case Layout::RowBroadcast:
      return static_cast<std::size_t>(cols);  // one row for all rows
    case Layout::Scalar:
      return 1;
  }
  return 0;
}

// A [rows, cols] loop over the given operands (pointers with their element sizes and layouts).
cpu::StridedLoop make_loop(std::int64_t rows, std::int64_t cols, const std::vector<void*>& data,
                           const std::vector<std::int64_t>& element_sizes,
                           const std::vector<Layout>& layouts) {
  cpu::StridedLoop loop;
  loop.ndim = 2;
  loop.nops = static_cast<int>(data.size());
  loop.sizes[0] = rows;
  loop.sizes[1] = cols;
  for (int k = 0; k < loop.nops; ++k) {
    loop.data[k] = static_cast<char*>(data[k]);
    const std::int64_t e = element_sizes[k];
    switch (layouts[k]) {
      case Layout::Dense:
        loop.strides[k][0] = cols * e;
        loop.strides[k][1] = e;
        break;
      case Layout::Transposed:
        loop.strides[k][0] = e;
        loop.strides[k][1] = rows * e;
        break;
      case Layout::RowBroadcast:
        loop.strides[k][0] = 0;
        loop.strides[k][1] = e;
        break;
      case Layout::Scalar:
        loop.strides[k][0] = 0;
        loop.strides[k][1] = 0;
        break;
    }
  }
  return loop;
}

// require_close compares |got - want|, which is NaN for two equal infinities, so it fails
// wherever both sides overflow alike: float16 Div, Reciprocal and Pow of inputs near 0, and
// the float -> float16 casts past 65504. Equal infinities are set to 0 on both sides first;
// an infinity on one side only still fails.
template <class T>
void require_close_inf(std::vector<T> got, std::vector<T> want, const std::string& what,
                       double scale = 1.0) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                std::is_same_v<T, BFloat16>) {
    for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
      const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
      if (std::isinf(w) && g == w) got[i] = want[i] = T(0.0f);
    }
  }
  require_close(got, want, what, scale);
}

struct Shape {
  std::int64_t rows, cols;
};
const std::vector<Shape> kShapes = {{1, 1}, {3, 7}, {33, 65}, {128, 257}, {0, 5}};

std::string describe(const char* what, Shape s, int layout) {
  return std::string(what) + " [" + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
         "] layout " + std::to_string(layout);
}

template <class T>
void check_unary(cpu::UnaryOp op, double lo_value = -2, double hi_value = 2, double lo = 0,
                 double hi = 0) {
  for (Shape s : kShapes) {
    for (Layout in_layout : {Layout::Dense, Layout::Transposed, Layout::Scalar}) {
      auto in = random_values<T>(storage_size(in_layout, s.rows, s.cols), 11, lo_value, hi_value);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      std::vector<T> want(n);
      cpu::unary<T>(op,
                    make_loop(s.rows, s.cols, {want.data(), in.data()}, {sizeof(T), sizeof(T)},
                              {Layout::Dense, in_layout}),
                    lo, hi);
      DeviceBuffer<T> d_in(in), d_out(n);
      gpu::unary<T>(op,
                    make_loop(s.rows, s.cols, {d_out.get(), d_in.get()}, {sizeof(T), sizeof(T)},
                              {Layout::Dense, in_layout}),
                    lo, hi);
      require_close_inf(
          d_out.download(), want,
          describe("unary", s, static_cast<int>(in_layout)) + " op " + std::to_string(int(op)));
    }
  }
}

template <class T>
void check_binary(cpu::BinaryOp op, double alpha = 1, double beta = 0, double lo_value = -2,
                  double hi_value = 2) {
  const std::vector<std::pair<Layout, Layout>> layouts = {
      {Layout::Dense, Layout::Dense},
      {Layout::Transposed, Layout::RowBroadcast},
      {Layout::Scalar, Layout::Dense},
      {Layout::Dense, Layout::Scalar}};
  for (Shape s : kShapes) {
    for (std::size_t l = 0; l < layouts.size(); ++l) {
      const auto [la, lb] = layouts[l];
      auto a = random_values<T>(storage_size(la, s.rows, s.cols), 21, lo_value, hi_value);
      auto b = random_values<T>(storage_size(lb, s.rows, s.cols), 22, lo_value, hi_value);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      std::vector<T> want(n);
      const std::vector<std::int64_t> sizes = {sizeof(T), sizeof(T), sizeof(T)};
      cpu::binary<T>(op,
                     make_loop(s.rows, s.cols, {want.data(), a.data(), b.data()}, sizes,
                               {Layout::Dense, la, lb}),
                     alpha, beta);
      DeviceBuffer<T> d_a(a), d_b(b), d_out(n);
      gpu::binary<T>(op,
                     make_loop(s.rows, s.cols, {d_out.get(), d_a.get(), d_b.get()}, sizes,
                               {Layout::Dense, la, lb}),
                     alpha, beta);
      require_close_inf(
          d_out.download(), want,
          describe("binary", s, static_cast<int>(l)) + " op " + std::to_string(int(op)));
    }
  }
}

const std::vector<cpu::UnaryOp> kAllUnary = {
    cpu::UnaryOp::Neg,  cpu::UnaryOp::Exp,        cpu::UnaryOp::Log,     cpu::UnaryOp::Sqrt,
    cpu::UnaryOp::Abs,  cpu::UnaryOp::Relu,       cpu::UnaryOp::Sigmoid, cpu::UnaryOp::Tanh,
    cpu::UnaryOp::Gelu, cpu::UnaryOp::Reciprocal, cpu::UnaryOp::Square,  cpu::UnaryOp::Sign};
const std::vector<cpu::BinaryOp> kAllBinary = {cpu::BinaryOp::Add,
                                               cpu::BinaryOp::Sub,
                                               cpu::BinaryOp::Mul,
                                               cpu::BinaryOp::Div,
                                               cpu::BinaryOp::Pow,
                                               cpu::BinaryOp::ReluBackward,
                                               cpu::BinaryOp::SigmoidBackward,
                                               cpu::BinaryOp::TanhBackward,
                                               cpu::BinaryOp::GeluBackward};

template <class T>
void check_float_type() {
  // Log/Sqrt of the negative half of the inputs are NaN on both sides.
  for (auto op : kAllUnary) check_unary<T>(op);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_unary<T>(cpu::UnaryOp::Clamp, -2, 2, -0.5, 0.75);
  check_unary<T>(cpu::UnaryOp::Clamp, -2, 2, nan, 0.75);
  check_unary<T>(cpu::UnaryOp::Clamp, -2, 2, -0.5, nan);
  for (auto op : kAllBinary) check_binary<T>(op);
  check_binary<T>(cpu::BinaryOp::Add, 0.5);
  check_binary<T>(cpu::BinaryOp::Sub, -2.0);
  check_binary<T>(cpu::BinaryOp::Pow, 1, 0, 0.1, 3);  // positive bases
  check_binary<T>(cpu::BinaryOp::ClampBackward, -0.5, 0.75);
  check_binary<T>(cpu::BinaryOp::ClampBackward, nan, 0.75);
}

template <class T>
void check_integer_type() {
  for (auto op : {cpu::UnaryOp::Neg, cpu::UnaryOp::Abs, cpu::UnaryOp::Relu, cpu::UnaryOp::Square,
                  cpu::UnaryOp::Sign})
    check_unary<T>(op, -50, 50);
  check_unary<T>(cpu::UnaryOp::Clamp, -50, 50, -5, 7);
  check_unary<T>(cpu::UnaryOp::Sqrt, 0, 1000);
  check_unary<T>(cpu::UnaryOp::Exp, 0, 10);
  for (auto op :
       {cpu::BinaryOp::Add, cpu::BinaryOp::Sub, cpu::BinaryOp::Mul, cpu::BinaryOp::ReluBackward})
    check_binary<T>(op, 1, 0, -50, 50);
  check_binary<T>(cpu::BinaryOp::Add, 3, 0, -50, 50);
  check_binary<T>(cpu::BinaryOp::Div, 1, 0, 1, 50);  // truncating division, no zero divisors
  check_binary<T>(cpu::BinaryOp::Pow, 1, 0, 1, 5);
}

}  // namespace

TEST_CASE("cuda elementwise: unary and binary ops, float32", "[cuda]") {
  check_float_type<float>();
}
TEST_CASE("cuda elementwise: unary and binary ops, float64", "[cuda]") {
  check_float_type<double>();
}
TEST_CASE("cuda elementwise: unary and binary ops, float16", "[cuda]") { check_float_type<Half>(); }
TEST_CASE("cuda elementwise: unary and binary ops, bfloat16", "[cuda]") {
  check_float_type<BFloat16>();
}
TEST_CASE("cuda elementwise: unary and binary ops, integers", "[cuda]") {
  check_integer_type<std::int32_t>();
  check_integer_type<std::int64_t>();
  // uint8 wraps as the CPU's does (Neg, Sub).
  for (auto op : {cpu::UnaryOp::Neg, cpu::UnaryOp::Square, cpu::UnaryOp::Sign, cpu::UnaryOp::Relu})
    check_unary<std::uint8_t>(op, 0, 200);
  check_binary<std::uint8_t>(cpu::BinaryOp::Sub, 1, 0, 0, 200);
  check_binary<std::uint8_t>(cpu::BinaryOp::Div, 1, 0, 1, 200);
}

TEST_CASE("cuda elementwise: NaN propagation", "[cuda]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> in = {nan, -1.0f, 0.0f, 2.0f, nan, -0.0f, 3.5f};
  for (auto op : {cpu::UnaryOp::Relu, cpu::UnaryOp::Abs, cpu::UnaryOp::Clamp, cpu::UnaryOp::Exp,
                  cpu::UnaryOp::Sign, cpu::UnaryOp::Gelu}) {
    std::vector<float> want(in.size());
    cpu::unary<float>(
        op, make_loop(1, 7, {want.data(), in.data()}, {4, 4}, {Layout::Dense, Layout::Dense}), -1,
        1);
    DeviceBuffer<float> d_in(in), d_out(in.size());
    gpu::unary<float>(
        op, make_loop(1, 7, {d_out.get(), d_in.get()}, {4, 4}, {Layout::Dense, Layout::Dense}), -1,
        1);
    require_close(d_out.download(), want, "NaN op " + std::to_string(int(op)));
  }
}

template <class T>
void check_compare() {
  for (Shape s : kShapes) {
    for (auto op : {cpu::CompareOp::Eq, cpu::CompareOp::Ne, cpu::CompareOp::Lt, cpu::CompareOp::Le,
                    cpu::CompareOp::Gt, cpu::CompareOp::Ge}) {
      // Few distinct values, so equality happens; b broadcast along rows, a transposed.
      auto a = random_values<T>(storage_size(Layout::Transposed, s.rows, s.cols), 31, -3, 3);
      auto b = random_values<T>(storage_size(Layout::RowBroadcast, s.rows, s.cols), 32, -3, 3);
      if constexpr (std::is_floating_point_v<T>) {
        for (auto& v : a) v = std::round(v);
        for (auto& v : b) v = std::round(v);
      }
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      const std::vector<std::int64_t> sizes = {1, sizeof(T), sizeof(T)};
      const std::vector<Layout> layouts = {Layout::Dense, Layout::Transposed, Layout::RowBroadcast};
      std::vector<char> want_raw(n);
      cpu::compare<T>(
          op, make_loop(s.rows, s.cols, {want_raw.data(), a.data(), b.data()}, sizes, layouts));
      DeviceBuffer<std::uint8_t> d_out(n);
      DeviceBuffer<T> d_a(a), d_b(b);
      gpu::compare<T>(
          op, make_loop(s.rows, s.cols, {d_out.get(), d_a.get(), d_b.get()}, sizes, layouts));
      const auto got = d_out.download();
      for (std::size_t i = 0; i < n; ++i) {
        INFO(describe("compare", s, int(op)) << " element " << i);
        REQUIRE(int(got[i]) == int(want_raw[i]));
      }
    }
  }
}

TEST_CASE("cuda elementwise: compare", "[cuda]") {
  check_compare<float>();
  check_compare<double>();
  check_compare<std::int32_t>();
  check_compare<std::int64_t>();
}

TEST_CASE("cuda elementwise: where", "[cuda]") {
  for (Shape s : kShapes) {
    const auto n = static_cast<std::size_t>(s.rows * s.cols);
    auto cond = random_values<std::uint8_t>(n, 41, 0, 2);  // 0 or 1, stored as bool bytes
    auto a = random_values<float>(storage_size(Layout::Transposed, s.rows, s.cols), 42);
    auto b = random_values<float>(1, 43);
    const std::vector<std::int64_t> sizes = {4, 1, 4, 4};
    const std::vector<Layout> layouts = {Layout::Dense, Layout::Dense, Layout::Transposed,
                                         Layout::Scalar};
    std::vector<float> want(n);
    cpu::where<float>(
        make_loop(s.rows, s.cols, {want.data(), cond.data(), a.data(), b.data()}, sizes, layouts));
    DeviceBuffer<float> d_out(n), d_a(a), d_b(b);
    DeviceBuffer<std::uint8_t> d_cond(cond);
    gpu::where<float>(make_loop(s.rows, s.cols, {d_out.get(), d_cond.get(), d_a.get(), d_b.get()},
                                sizes, layouts));
    require_close(d_out.download(), want, describe("where", s, 0), 0.0);
  }
}

TEST_CASE("cuda elementwise: fill", "[cuda]") {
  for (Shape s : kShapes) {
    const auto n = static_cast<std::size_t>(s.rows * s.cols);
    DeviceBuffer<Half> d_half(n);
    gpu::fill<Half>(make_loop(s.rows, s.cols, {d_half.get()}, {2}, {Layout::Dense}), Half(1.5f));
    require_close(d_half.download(), std::vector<Half>(n, Half(1.5f)), describe("fill half", s, 0),
                  0.0);
    // A transposed (non-contiguous) output.
    DeviceBuffer<std::int64_t> d_int(n);
    gpu::fill<std::int64_t>(make_loop(s.rows, s.cols, {d_int.get()}, {8}, {Layout::Transposed}),
                            -7);
    require_close(d_int.download(), std::vector<std::int64_t>(n, -7), describe("fill int64", s, 1));
  }
}

// bool data lives in uint8_t vectors (same size, 0/1): std::vector<bool> is bit-packed.
template <class T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class Dst, class Src>
void check_cast(double lo, double hi, Layout in_layout = Layout::Dense) {
  using D = storage_t<Dst>;
  using S = storage_t<Src>;
  for (Shape s : kShapes) {
    auto in = random_values<S>(storage_size(in_layout, s.rows, s.cols), 51, lo, hi);
    const auto n = static_cast<std::size_t>(s.rows * s.cols);
    const std::vector<std::int64_t> sizes = {sizeof(Dst), sizeof(Src)};
    std::vector<D> want(n);
    cpu::cast<Dst, Src>(
        make_loop(s.rows, s.cols, {want.data(), in.data()}, sizes, {Layout::Dense, in_layout}));
    DeviceBuffer<S> d_in(in);
    DeviceBuffer<D> d_out(n);
    gpu::cast<Dst, Src>(
        make_loop(s.rows, s.cols, {d_out.get(), d_in.get()}, sizes, {Layout::Dense, in_layout}));
    require_close_inf(d_out.download(), want, describe("cast", s, static_cast<int>(in_layout)),
                      0.0);
  }
}

TEST_CASE("cuda elementwise: casts", "[cuda]") {
  // Exact agreement (scale 0): the conversions must round the same way.
  check_cast<Half, float>(-70000, 70000);  // incl. overflow to inf
  check_cast<Half, float>(-1e-6, 1e-6);    // subnormals
  check_cast<BFloat16, float>(-1e30, 1e30, Layout::Transposed);
  check_cast<float, Half>(-100, 100);
  check_cast<float, BFloat16>(-100, 100);
  check_cast<std::int32_t, float>(-1000, 1000);  // truncation toward zero
  check_cast<std::int64_t, double>(-1e12, 1e12, Layout::Transposed);
  check_cast<float, std::int64_t>(-1e9, 1e9);
  check_cast<std::uint8_t, float>(0, 255);
  check_cast<bool, float>(-1, 1);
  check_cast<bool, Half>(-1, 1);
  check_cast<float, bool>(0, 2);
  check_cast<Half, std::int32_t>(-3000, 3000);
  check_cast<double, float>(-1, 1, Layout::Scalar);
}

TEST_CASE("cuda elementwise: more elements than one launch's grid covers", "[cuda]") {
  // blocks_for caps a launch at 65536 blocks of 256 threads (2^24 threads; a batch of 256
  // CIFAR activations with 64 channels is exactly that): past it every thread takes several
  // elements of the grid-stride loop, on the contiguous and the strided path.
  const std::int64_t rows = 4099, cols = 4099;  // 16801801 > 2^24
  const auto n = static_cast<std::size_t>(rows * cols);
  auto a = random_values<float>(n, 71);  // not const: make_loop takes void*
  auto b = random_values<float>(static_cast<std::size_t>(cols), 72);
  const std::vector<std::int64_t> sizes = {4, 4, 4};
  const DeviceBuffer<float> da(a), db(b);
  DeviceBuffer<float> dout(n);
  for (Layout la : {Layout::Dense, Layout::Transposed}) {
    const std::vector<Layout> layouts = {Layout::Dense, la, Layout::RowBroadcast};
    std::vector<float> want(n);
    cpu::binary<float>(cpu::BinaryOp::Mul,
                       make_loop(rows, cols, {want.data(), a.data(), b.data()}, sizes, layouts));
    gpu::binary<float>(cpu::BinaryOp::Mul,
                       make_loop(rows, cols, {dout.get(), da.get(), db.get()}, sizes, layouts));
    // One rounded product per element on both sides: bit for bit.
    require_close(dout.download(), want, describe("grid-stride binary", {rows, cols}, int(la)),
                  0.0);
    gpu::unary<float>(cpu::UnaryOp::Neg,
                      make_loop(rows, cols, {dout.get(), da.get()}, {4, 4}, {Layout::Dense, la}));
    cpu::unary<float>(cpu::UnaryOp::Neg,
                      make_loop(rows, cols, {want.data(), a.data()}, {4, 4}, {Layout::Dense, la}));
    require_close(dout.download(), want, describe("grid-stride unary", {rows, cols}, int(la)), 0.0);
  }
}
