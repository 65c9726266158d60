// The CUDA elementwise instantiations test_elementwise.cpp leaves out, against the CPU: compare
// on float16, bfloat16, uint8 and bool; where and fill on every dtype; every one of the 64 casts;
// and the uint8 math ops. All must agree exactly (integers, bools and the rounding of one cast).
#include <catch2/catch.hpp>

#include <cstdint>
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

// bool data lives in uint8_t vectors (same size, 0/1): std::vector<bool> is bit-packed.
template <class T>
using storage_t = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class T>
const char* name_of() {
  if constexpr (std::is_same_v<T, float>)
    return "float32";
  else if constexpr (std::is_same_v<T, double>)
    return "float64";
  else if constexpr (std::is_same_v<T, Half>)
    return "float16";
  else if constexpr (std::is_same_v<T, BFloat16>)
    return "bfloat16";
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "int64";
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return "uint8";
  else
    return "bool";
}

// How an operand lies over a [rows, cols] loop.
enum class Layout { Dense, Transposed, Scalar };

std::size_t storage_size(Layout l, std::int64_t rows, std::int64_t cols) {
  return l == Layout::Scalar ? 1 : static_cast<std::size_t>(rows * cols);
}

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
      case Layout::Scalar:
        loop.strides[k][0] = 0;
        loop.strides[k][1] = 0;
        break;
    }
  }
  return loop;
}

struct Shape {
  std::int64_t rows, cols;
};
// One element, odd sizes, more than one block's worth, and nothing at all.
const std::vector<Shape> kShapes = {{1, 1}, {3, 7}, {129, 257}, {0, 5}};

std::string describe(const char* what, Shape s, int variant) {
  return std::string(what) + " [" + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
         "] variant " + std::to_string(variant);
}

// Values in [lo, hi) of T, few distinct ones (rounded to integers) so comparisons see ties.
template <class T>
std::vector<storage_t<T>> integral_values(std::size_t n, std::uint32_t seed, double lo, double hi) {
  if constexpr (std::is_same_v<T, bool>) {
    return random_values<std::uint8_t>(n, seed, 0, 2);
  } else {
    auto v = random_values<T>(n, seed, lo, hi);
    for (auto& x : v)
      x = static_cast<T>(static_cast<float>(static_cast<std::int64_t>(static_cast<double>(x))));
    return v;
  }
}

template <class T>
void check_compare() {
  using S = storage_t<T>;
  const double lo = std::is_unsigned_v<S> ? 0 : -3;
  for (Shape s : kShapes) {
    for (auto op : {cpu::CompareOp::Eq, cpu::CompareOp::Ne, cpu::CompareOp::Lt, cpu::CompareOp::Le,
                    cpu::CompareOp::Gt, cpu::CompareOp::Ge}) {
      const std::vector<Layout> layouts = {Layout::Dense, Layout::Transposed, Layout::Scalar};
      auto a = integral_values<T>(storage_size(Layout::Transposed, s.rows, s.cols), 61, lo, 3);
      auto b = integral_values<T>(1, 62, lo, 3);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      const std::vector<std::int64_t> sizes = {1, sizeof(S), sizeof(S)};
      std::vector<std::uint8_t> want(n);
      cpu::compare<T>(op,
                      make_loop(s.rows, s.cols, {want.data(), a.data(), b.data()}, sizes, layouts));
      DeviceBuffer<std::uint8_t> d_out(n);
      DeviceBuffer<S> d_a(a), d_b(b);
      gpu::compare<T>(
          op, make_loop(s.rows, s.cols, {d_out.get(), d_a.get(), d_b.get()}, sizes, layouts));
      INFO(name_of<T>());
      require_close(d_out.download(), want, describe("compare", s, int(op)));
    }
  }
}

template <class T>
void check_where() {
  using S = storage_t<T>;
  const double lo = std::is_unsigned_v<S> ? 0 : -100;
  for (Shape s : kShapes) {
    const auto n = static_cast<std::size_t>(s.rows * s.cols);
    const std::vector<std::pair<Layout, Layout>> layouts = {{Layout::Dense, Layout::Dense},
                                                            {Layout::Transposed, Layout::Scalar}};
    for (std::size_t l = 0; l < layouts.size(); ++l) {
      const auto [la, lb] = layouts[l];
      auto cond = random_values<std::uint8_t>(n, 71, 0, 2);
      auto a = integral_values<T>(storage_size(la, s.rows, s.cols), 72, lo, 100);
      auto b = integral_values<T>(storage_size(lb, s.rows, s.cols), 73, lo, 100);
      const std::vector<std::int64_t> sizes = {sizeof(S), 1, sizeof(S), sizeof(S)};
      const std::vector<Layout> all = {Layout::Dense, Layout::Dense, la, lb};
      std::vector<S> want(n);
      cpu::where<T>(
          make_loop(s.rows, s.cols, {want.data(), cond.data(), a.data(), b.data()}, sizes, all));
      DeviceBuffer<S> d_out(n), d_a(a), d_b(b);
      DeviceBuffer<std::uint8_t> d_cond(cond);
      gpu::where<T>(
          make_loop(s.rows, s.cols, {d_out.get(), d_cond.get(), d_a.get(), d_b.get()}, sizes, all));
      INFO(name_of<T>());
      require_close(d_out.download(), want, describe("where", s, static_cast<int>(l)), 0.0);
    }
  }
}

template <class T>
void check_fill(T value) {
  using S = storage_t<T>;
  for (Shape s : kShapes) {
    for (Layout layout : {Layout::Dense, Layout::Transposed}) {
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      std::vector<S> want(n);
      cpu::fill<T>(make_loop(s.rows, s.cols, {want.data()}, {sizeof(S)}, {layout}), value);
      DeviceBuffer<S> d_out(n);
      gpu::fill<T>(make_loop(s.rows, s.cols, {d_out.get()}, {sizeof(S)}, {layout}), value);
      INFO(name_of<T>());
      require_close(d_out.download(), want, describe("fill", s, static_cast<int>(layout)), 0.0);
    }
  }
}

// Source values every destination holds without overflow (casts out of range are undefined
// behaviour on the CPU): [0, 200) where either side is uint8, else [-100, 100), and fractional
// for floating sources so truncation toward zero is exercised.
template <class Dst, class Src>
void check_cast() {
  using D = storage_t<Dst>;
  using S = storage_t<Src>;
  const bool unsigned_side = std::is_same_v<Dst, std::uint8_t> || std::is_same_v<Src, std::uint8_t>;
  const double lo = unsigned_side ? 0 : -100, hi = unsigned_side ? 200 : 100;
  for (Shape s : kShapes) {
    for (Layout in_layout : {Layout::Dense, Layout::Transposed}) {
      std::vector<S> in;
      if constexpr (std::is_same_v<Src, bool>)
        in = random_values<std::uint8_t>(storage_size(in_layout, s.rows, s.cols), 81, 0, 2);
      else
        in = random_values<Src>(storage_size(in_layout, s.rows, s.cols), 81, lo, hi);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      const std::vector<std::int64_t> sizes = {sizeof(D), sizeof(S)};
      std::vector<D> want(n);
      cpu::cast<Dst, Src>(
          make_loop(s.rows, s.cols, {want.data(), in.data()}, sizes, {Layout::Dense, in_layout}));
      DeviceBuffer<S> d_in(in);
      DeviceBuffer<D> d_out(n);
      gpu::cast<Dst, Src>(
          make_loop(s.rows, s.cols, {d_out.get(), d_in.get()}, sizes, {Layout::Dense, in_layout}));
      INFO("cast " << name_of<Src>() << " -> " << name_of<Dst>());
      require_close(d_out.download(), want, describe("cast", s, static_cast<int>(in_layout)), 0.0);
    }
  }
}

template <class Dst>
void check_casts_to() {
  check_cast<Dst, float>();
  check_cast<Dst, double>();
  check_cast<Dst, Half>();
  check_cast<Dst, BFloat16>();
  check_cast<Dst, std::int32_t>();
  check_cast<Dst, std::int64_t>();
  check_cast<Dst, std::uint8_t>();
  check_cast<Dst, bool>();
}

void check_uint8_unary(cpu::UnaryOp op, double lo, double hi, double clamp_lo = 0,
                       double clamp_hi = 0) {
  for (Shape s : kShapes) {
    for (Layout layout : {Layout::Dense, Layout::Transposed, Layout::Scalar}) {
      auto in = random_values<std::uint8_t>(storage_size(layout, s.rows, s.cols), 91, lo, hi);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      std::vector<std::uint8_t> want(n);
      cpu::unary<std::uint8_t>(
          op, make_loop(s.rows, s.cols, {want.data(), in.data()}, {1, 1}, {Layout::Dense, layout}),
          clamp_lo, clamp_hi);
      DeviceBuffer<std::uint8_t> d_in(in), d_out(n);
      gpu::unary<std::uint8_t>(
          op, make_loop(s.rows, s.cols, {d_out.get(), d_in.get()}, {1, 1}, {Layout::Dense, layout}),
          clamp_lo, clamp_hi);
      require_close(d_out.download(), want, describe("uint8 unary", s, int(op)));
    }
  }
}

void check_uint8_binary(cpu::BinaryOp op, double lo, double hi, double alpha = 1) {
  for (Shape s : kShapes) {
    for (Layout lb : {Layout::Dense, Layout::Scalar}) {
      auto a =
          random_values<std::uint8_t>(storage_size(Layout::Transposed, s.rows, s.cols), 92, lo, hi);
      auto b = random_values<std::uint8_t>(storage_size(lb, s.rows, s.cols), 93, lo, hi);
      const auto n = static_cast<std::size_t>(s.rows * s.cols);
      const std::vector<Layout> layouts = {Layout::Dense, Layout::Transposed, lb};
      std::vector<std::uint8_t> want(n);
      cpu::binary<std::uint8_t>(
          op, make_loop(s.rows, s.cols, {want.data(), a.data(), b.data()}, {1, 1, 1}, layouts),
          alpha);
      DeviceBuffer<std::uint8_t> d_a(a), d_b(b), d_out(n);
      gpu::binary<std::uint8_t>(
          op, make_loop(s.rows, s.cols, {d_out.get(), d_a.get(), d_b.get()}, {1, 1, 1}, layouts),
          alpha);
      require_close(d_out.download(), want, describe("uint8 binary", s, int(op)));
    }
  }
}

}  // namespace

TEST_CASE("cuda elementwise dtypes: compare on float16, bfloat16, uint8 and bool", "[cuda]") {
  check_compare<Half>();
  check_compare<BFloat16>();
  check_compare<std::uint8_t>();
  check_compare<bool>();
}

TEST_CASE("cuda elementwise dtypes: where on every dtype", "[cuda]") {
  check_where<float>();
  check_where<double>();
  check_where<Half>();
  check_where<BFloat16>();
  check_where<std::int32_t>();
  check_where<std::int64_t>();
  check_where<std::uint8_t>();
  check_where<bool>();
}

TEST_CASE("cuda elementwise dtypes: fill on every dtype", "[cuda]") {
  check_fill<float>(-2.5f);
  check_fill<double>(1e-300);
  check_fill<Half>(Half(65504.0f));
  check_fill<BFloat16>(BFloat16(-3.0e38f));
  check_fill<std::int32_t>(-2147483647);
  check_fill<std::int64_t>(std::int64_t{1} << 40);
  check_fill<std::uint8_t>(255);
  check_fill<bool>(true);
}

TEST_CASE("cuda elementwise dtypes: all 64 casts agree exactly", "[cuda]") {
  check_casts_to<float>();
  check_casts_to<double>();
  check_casts_to<Half>();
  check_casts_to<BFloat16>();
  check_casts_to<std::int32_t>();
  check_casts_to<std::int64_t>();
  check_casts_to<std::uint8_t>();
  check_casts_to<bool>();
}

TEST_CASE("cuda elementwise dtypes: uint8 math agrees exactly", "[cuda]") {
  check_uint8_unary(cpu::UnaryOp::Abs, 0, 256);
  check_uint8_unary(cpu::UnaryOp::Clamp, 0, 256, 20, 150);
  check_uint8_unary(cpu::UnaryOp::Sqrt, 0, 256);
  check_uint8_unary(cpu::UnaryOp::Exp, 0, 5);
  check_uint8_binary(cpu::BinaryOp::Add, 0, 256);  // wraps past 255, as the CPU's does
  check_uint8_binary(cpu::BinaryOp::Add, 0, 100, 2);
  check_uint8_binary(cpu::BinaryOp::Mul, 0, 256);
  check_uint8_binary(cpu::BinaryOp::Pow, 1, 4);
  check_uint8_binary(cpu::BinaryOp::ReluBackward, 0, 256);
}
