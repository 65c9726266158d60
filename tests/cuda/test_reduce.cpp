// The CUDA reductions against their CPU reference: every function over dim sets from none to
// all, transposed and stepped views, each kernel (warp rows, block rows, columns) and their
// split forms, ties, NaN, integer and bool types, empty and broadcast inputs, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/reduce.h"
#include "tests/cuda/device_buffer.h"

using namespace frugal;
using frugal::test::DeviceBuffer;
using frugal::test::random_values;
using frugal::test::require_close;
namespace cpu = frugal::kernels::cpu;
namespace gpu = frugal::kernels::cuda;
using cpu::dim_bit;
using cpu::StridedDims;
using cpu::sum_t;

namespace {

// bool travels as uint8 (0 or 1) in host vectors and device buffers: std::vector<bool> holds
// no bools.
template <class T>
using Store = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class T>
const T* as(const std::vector<Store<T>>& v) {
  return reinterpret_cast<const T*>(v.data());
}
template <class T>
T* as(std::vector<Store<T>>& v) {
  return reinterpret_cast<T*>(v.data());
}
template <class T>
T* as(const DeviceBuffer<Store<T>>& b) {
  return reinterpret_cast<T*>(b.get());
}

// A view of a buffer that holds the tensor contiguously in the order `perm` (perm[0]
// outermost), optionally taking every `step`-th element of dim `step_dim`.
struct View {
  StridedDims dims;
  std::int64_t storage = 0;
};

View make_view(std::vector<std::int64_t> sizes, std::vector<int> perm, int step_dim = -1,
               std::int64_t step = 1) {
  View v;
  v.dims.ndim = static_cast<int>(sizes.size());
  std::int64_t stride = 1;
  for (int i = v.dims.ndim - 1; i >= 0; --i) {
    const int d = perm[static_cast<std::size_t>(i)];
    const std::int64_t k = d == step_dim ? step : 1;
    v.dims.sizes[d] = sizes[static_cast<std::size_t>(d)];
    v.dims.strides[d] = stride * k;
    stride *= v.dims.sizes[d] * k;
  }
  v.storage = stride;
  return v;
}

std::int64_t out_numel(const StridedDims& d, std::uint32_t mask) {
  std::int64_t n = 1;
  for (int i = 0; i < d.ndim; ++i)
    if (!(mask & dim_bit(i))) n *= d.sizes[i];
  return n;
}

// Small layouts reach every mask quickly; the large ones reach the block-row kernel, the
// column kernel with many lanes, and the split (multi-piece) forms of both.
std::vector<View> small_layouts() {
  return {
      make_view({5, 7, 9}, {0, 1, 2}),               // contiguous
      make_view({5, 7, 9}, {2, 1, 0}),               // fully transposed
      make_view({4, 6, 3, 10}, {0, 3, 1, 2}),        // channels-last-like
      make_view({6, 1, 33, 4}, {1, 0, 3, 2}, 2, 3),  // a size-1 dim and a stepped slice
      make_view({3, 130, 17}, {2, 0, 1}),            // lanes wider than a warp
  };
}

std::vector<View> large_layouts() {
  return {
      make_view({3, 2001}, {0, 1}),            // rows longer than a warp takes
      make_view({2, 70001}, {0, 1}),           // few long rows: split rows
      make_view({40001, 3}, {0, 1}),           // few columns, long: split columns
      make_view({2001, 3}, {1, 0}),            // transposed: long strided rows
      make_view({257, 300}, {0, 1}),           // a bias gradient [N, C] over N (and rows over C)
      make_view({8, 5, 9, 11}, {0, 1, 2, 3}),  // per-channel NCHW
  };
}

// Values of T in [-3, 3) whole numbers, so that ties are many (bool: 0 or 1).
template <class T>
std::vector<Store<T>> tie_values(std::size_t n, std::uint32_t seed) {
  const auto ints = random_values<std::int32_t>(n, seed, std::is_same_v<T, bool> ? 0 : -3,
                                                std::is_same_v<T, bool> ? 2 : 3);
  std::vector<Store<T>> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      v[i] = static_cast<std::uint8_t>(ints[i] + 3);
    } else if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) {
      v[i] = static_cast<Store<T>>(ints[i]);
    } else {
      v[i] = static_cast<T>(static_cast<float>(ints[i]));
    }
  }
  return v;
}

template <class T>
std::vector<Store<T>> values_for(std::size_t n, std::uint32_t seed) {
  if constexpr (std::is_same_v<T, bool>) {
    return random_values<std::uint8_t>(n, seed, 0.0, 2.0);
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return random_values<T>(n, seed, 0.0, 256.0);
  } else if constexpr (std::is_integral_v<T>) {
    return random_values<T>(n, seed, -1000.0, 1000.0);
  } else {
    return random_values<T>(n, seed);
  }
}

// sum, amax and amin: every type.
template <class T>
void check_any_reductions(const std::vector<Store<T>>& x, const StridedDims& d, std::uint32_t mask,
                          const std::string& what) {
  const auto n = static_cast<std::size_t>(out_numel(d, mask));
  const DeviceBuffer<Store<T>> dx(x);
  std::vector<sum_t<T>> s(n);
  std::vector<Store<T>> mx(n), mn(n);
  cpu::sum(as<T>(x), d, mask, s.data());
  cpu::amax(as<T>(x), d, mask, as<T>(mx));
  cpu::amin(as<T>(x), d, mask, as<T>(mn));
  DeviceBuffer<sum_t<T>> gs(n);
  DeviceBuffer<Store<T>> gmx(n), gmn(n);
  gpu::sum(as<T>(dx), d, mask, gs.get());
  gpu::amax(as<T>(dx), d, mask, as<T>(gmx));
  gpu::amin(as<T>(dx), d, mask, as<T>(gmn));
  require_close(gs.download(), s, what + " sum");
  require_close(gmx.download(), mx, what + " amax");
  require_close(gmn.download(), mn, what + " amin");
}

// mean and var (with and without mean_out): floating types.
template <class T>
void check_float_reductions(const std::vector<T>& x, const StridedDims& d, std::uint32_t mask,
                            double correction, const std::string& what) {
  const auto n = static_cast<std::size_t>(out_numel(d, mask));
  const DeviceBuffer<T> dx(x);
  std::vector<T> m(n), v(n), vm(n), v2(n);
  cpu::mean(x.data(), d, mask, m.data());
  cpu::var(x.data(), d, mask, correction, v.data(), vm.data());
  cpu::var(x.data(), d, mask, correction, v2.data());
  DeviceBuffer<T> gm(n), gv(n), gvm(n), gv2(n);
  gpu::mean(dx.get(), d, mask, gm.get());
  gpu::var(dx.get(), d, mask, correction, gv.get(), gvm.get());
  gpu::var(dx.get(), d, mask, correction, gv2.get());
  require_close(gm.download(), m, what + " mean");
  require_close(gv.download(), v, what + " var");
  require_close(gvm.download(), vm, what + " var's mean_out");
  require_close(gv2.download(), v2, what + " var without mean_out");
}

// argmax, argmin and the value-and-index forms along `dim`: indices exactly.
template <class T>
void check_index_reductions(const std::vector<Store<T>>& x, const StridedDims& d, int dim,
                            const std::string& what) {
  const auto n = static_cast<std::size_t>(out_numel(d, d.ndim ? dim_bit(dim) : 0u));
  const DeviceBuffer<Store<T>> dx(x);
  std::vector<std::int64_t> amx(n), amn(n), imx(n), imn(n);
  std::vector<Store<T>> vmx(n), vmn(n);
  cpu::argmax(as<T>(x), d, dim, amx.data());
  cpu::argmin(as<T>(x), d, dim, amn.data());
  cpu::max_with_indices(as<T>(x), d, dim, as<T>(vmx), imx.data());
  cpu::min_with_indices(as<T>(x), d, dim, as<T>(vmn), imn.data());
  DeviceBuffer<std::int64_t> gamx(n), gamn(n), gimx(n), gimn(n);
  DeviceBuffer<Store<T>> gvmx(n), gvmn(n);
  gpu::argmax(as<T>(dx), d, dim, gamx.get());
  gpu::argmin(as<T>(dx), d, dim, gamn.get());
  gpu::max_with_indices(as<T>(dx), d, dim, as<T>(gvmx), gimx.get());
  gpu::min_with_indices(as<T>(dx), d, dim, as<T>(gvmn), gimn.get());
  require_close(gamx.download(), amx, what + " argmax");
  require_close(gamn.download(), amn, what + " argmin");
  require_close(gimx.download(), imx, what + " max's indices");
  require_close(gimn.download(), imn, what + " min's indices");
  require_close(gvmx.download(), vmx, what + " max's values");
  require_close(gvmn.download(), vmn, what + " min's values");
}

std::string describe(const View& v, std::uint32_t mask) {
  std::string s = "sizes [";
  for (int d = 0; d < v.dims.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.dims.sizes[d]);
  s += "] strides [";
  for (int d = 0; d < v.dims.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.dims.strides[d]);
  return s + "] mask " + std::to_string(mask);
}

template <class T>
void check_all_masks(const std::vector<View>& views, std::uint32_t seed) {
  for (const View& v : views) {
    const auto x = values_for<T>(static_cast<std::size_t>(v.storage), seed++);
    const std::uint32_t all = (1u << v.dims.ndim) - 1;
    for (std::uint32_t mask = 0; mask <= all; ++mask) {
      const std::string what = std::string(test::type_name(T{})) + " " + describe(v, mask);
      check_any_reductions<T>(x, v.dims, mask, what);
      check_float_reductions<T>(x, v.dims, mask, 1.0, what);
    }
  }
}

template <class T>
void check_integer_masks(const std::vector<View>& views, std::uint32_t seed) {
  for (const View& v : views) {
    const auto x = values_for<T>(static_cast<std::size_t>(v.storage), seed++);
    const std::uint32_t all = (1u << v.dims.ndim) - 1;
    for (std::uint32_t mask = 0; mask <= all; ++mask)
      check_any_reductions<T>(x, v.dims, mask, describe(v, mask));
  }
}

template <class T>
void check_ties(const std::vector<View>& views, std::uint32_t seed) {
  for (const View& v : views) {
    const auto x = tie_values<T>(static_cast<std::size_t>(v.storage), seed++);
    for (int dim = 0; dim < v.dims.ndim; ++dim)
      check_index_reductions<T>(x, v.dims, dim, describe(v, dim_bit(dim)));
  }
}

}  // namespace

TEST_CASE("cuda reduce: sum, mean, amax, amin and var match the CPU over every dim set", "[cuda]") {
  check_all_masks<float>(small_layouts(), 1);
  check_all_masks<double>(small_layouts(), 100);
  check_all_masks<Half>(small_layouts(), 200);
  check_all_masks<BFloat16>(small_layouts(), 300);
}

TEST_CASE("cuda reduce: large and split reductions match the CPU", "[cuda]") {
  check_all_masks<float>(large_layouts(), 400);
  check_all_masks<double>(large_layouts(), 500);
  check_all_masks<Half>(large_layouts(), 600);
  check_all_masks<BFloat16>(large_layouts(), 700);
}

TEST_CASE("cuda reduce: var's correction", "[cuda]") {
  for (const View& v :
       {make_view({6, 50}, {0, 1}), make_view({6, 50}, {1, 0}), make_view({3, 5000}, {0, 1})}) {
    const auto x = random_values<double>(static_cast<std::size_t>(v.storage), 9, -2.0, 5.0);
    const auto xf = random_values<float>(static_cast<std::size_t>(v.storage), 10, 100.0, 101.0);
    for (double correction : {0.0, 1.0, 2.5})
      for (std::uint32_t mask : {1u, 2u, 3u}) {
        const std::string what = describe(v, mask) + " correction " + std::to_string(correction);
        check_float_reductions<double>(x, v.dims, mask, correction, what);
        // Values far from 0 relative to their spread: the shifted sums must not cancel.
        check_float_reductions<float>(xf, v.dims, mask, correction, what);
      }
  }
}

TEST_CASE("cuda reduce: index reductions take the first of tied values", "[cuda]") {
  std::vector<View> views = small_layouts();
  for (const View& v : {make_view({3, 5000}, {0, 1}), make_view({20001, 3}, {0, 1}),
                        make_view({3, 3000}, {1, 0}), make_view({1, 300001}, {0, 1})})
    views.push_back(v);
  check_ties<float>(views, 1);
  check_ties<double>(views, 20);
  check_ties<Half>(views, 40);
  check_ties<BFloat16>(views, 60);
  check_ties<std::int32_t>(views, 80);
  check_ties<std::int64_t>(views, 100);
  check_ties<std::uint8_t>(views, 120);
  check_ties<bool>(views, 140);
}

TEST_CASE("cuda reduce: integer and bool sums, amax and amin are exact", "[cuda]") {
  std::vector<View> views = small_layouts();
  views.push_back(make_view({3, 2001}, {0, 1}));
  views.push_back(make_view({40001, 3}, {0, 1}));
  check_integer_masks<std::int32_t>(views, 1);
  check_integer_masks<std::int64_t>(views, 20);
  check_integer_masks<std::uint8_t>(views, 40);
  check_integer_masks<bool>(views, 60);
}

TEST_CASE("cuda reduce: NaN wins amax/amin, and its first index the index reductions", "[cuda]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const std::int64_t cols : {40, 5000}) {
    // Row 1 holds NaN twice (the first wins), row 2 only at its end, row 0 none.
    std::vector<float> x(static_cast<std::size_t>(3 * cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
    x[static_cast<std::size_t>(cols + cols / 2 + 3)] = nan;
    x[static_cast<std::size_t>(cols + cols / 2 - 5)] = nan;
    x[static_cast<std::size_t>(3 * cols - 1)] = nan;
    for (const View& v : {make_view({3, cols}, {0, 1}), make_view({3, cols}, {1, 0})}) {
      // The same logical values in either storage order.
      std::vector<float> data(x.size());
      for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          data[static_cast<std::size_t>(r * v.dims.strides[0] + c * v.dims.strides[1])] =
              x[static_cast<std::size_t>(r * cols + c)];
      std::vector<Half> half(data.begin(), data.end());
      for (std::uint32_t mask : {1u, 2u, 3u}) {
        check_any_reductions<float>(data, v.dims, mask, "float NaN " + describe(v, mask));
        check_float_reductions<float>(data, v.dims, mask, 1.0, "float NaN " + describe(v, mask));
        check_any_reductions<Half>(half, v.dims, mask, "half NaN " + describe(v, mask));
      }
      for (int dim : {0, 1}) {
        check_index_reductions<float>(data, v.dims, dim, "float NaN " + describe(v, dim_bit(dim)));
        check_index_reductions<Half>(half, v.dims, dim, "half NaN " + describe(v, dim_bit(dim)));
      }
      // And the values themselves, not only agreement with the CPU.
      const DeviceBuffer<float> dx(data);
      DeviceBuffer<std::int64_t> am(3);
      DeviceBuffer<float> mx(3);
      gpu::argmax(dx.get(), v.dims, 1, am.get());
      gpu::amax(dx.get(), v.dims, dim_bit(1), mx.get());
      const auto idx = am.download();
      const auto top = mx.download();
      CHECK(idx[0] == 6);  // the first 6 of a row of i % 7
      CHECK(idx[1] == cols / 2 - 5);
      CHECK(idx[2] == cols - 1);
      CHECK(top[0] == 6.0f);
      CHECK(std::isnan(top[1]));
      CHECK(std::isnan(top[2]));
    }
  }
}

TEST_CASE("cuda reduce: long float sums stay accurate", "[cuda]") {
  const std::int64_t n = 1'000'000;
  const StridedDims d = cpu::contiguous_dims(1, &n);
  const DeviceBuffer<float> ones(std::vector<float>(static_cast<std::size_t>(n), 1.0f));
  DeviceBuffer<float> s(1), m(1), v(1);
  gpu::sum(ones.get(), d, 1, s.get());
  gpu::mean(ones.get(), d, 1, m.get());
  gpu::var(ones.get(), d, 1, 1.0, v.get());
  CHECK(s.download()[0] == 1e6f);
  CHECK(m.download()[0] == 1.0f);
  CHECK(v.download()[0] == 0.0f);
  // 0.1 is inexact in float: a naive float accumulator would drift visibly here.
  const std::vector<float> tenths(static_cast<std::size_t>(n), 0.1f);
  const std::int64_t sizes[2] = {2, n / 2};
  for (std::uint32_t mask : {1u, 2u, 3u})
    check_any_reductions<float>(tenths, cpu::contiguous_dims(2, sizes), mask,
                                "tenths mask " + std::to_string(mask));
  DeviceBuffer<float> halves(2);
  const DeviceBuffer<float> dt(tenths);
  gpu::sum(dt.get(), cpu::contiguous_dims(2, sizes), dim_bit(1), halves.get());
  const auto h = halves.download();
  CHECK(h[0] == Approx(0.5e5).epsilon(1e-6));
  CHECK(h[1] == Approx(0.5e5).epsilon(1e-6));
}

TEST_CASE("cuda reduce: broadcast inputs, empty reductions, zero outputs and scalars", "[cuda]") {
  const DeviceBuffer<float> value(std::vector<float>{2.5f});
  StridedDims b;
  b.ndim = 2;
  b.sizes[0] = 1000;
  b.sizes[1] = 3;  // strides stay 0: one element seen 3000 times
  DeviceBuffer<float> s(3), total(1);
  gpu::sum(value.get(), b, dim_bit(0), s.get());
  gpu::sum(value.get(), b, dim_bit(0) | dim_bit(1), total.get());
  require_close(s.download(), std::vector<float>(3, 2500.0f), "broadcast sum");
  CHECK(total.download()[0] == 7500.0f);

  const std::int64_t empty_sizes[2] = {3, 0};
  const StridedDims e = cpu::contiguous_dims(2, empty_sizes);
  DeviceBuffer<float> out(3), out2(3);
  DeviceBuffer<std::int64_t> isum(3), idx(3);
  const DeviceBuffer<std::int32_t> ivalue(std::vector<std::int32_t>{7});
  out.upload({-1.0f, -1.0f, -1.0f});
  gpu::sum(value.get(), e, dim_bit(1), out.get());
  require_close(out.download(), std::vector<float>(3, 0.0f), "empty sum");
  gpu::sum(ivalue.get(), e, dim_bit(1), isum.get());
  require_close(isum.download(), std::vector<std::int64_t>(3, 0), "empty int sum");
  gpu::mean(value.get(), e, dim_bit(1), out.get());
  for (float v : out.download()) CHECK(std::isnan(v));
  out.upload({-1.0f, -1.0f, -1.0f});
  gpu::var(value.get(), e, dim_bit(1), 1.0, out.get(), out2.get());
  for (float v : out.download()) CHECK(std::isnan(v));
  for (float v : out2.download()) CHECK(std::isnan(v));
  CHECK_THROWS_WITH(gpu::amax(value.get(), e, dim_bit(1), out.get()),
                    Catch::Contains("cannot reduce over zero elements"));
  CHECK_THROWS_AS(gpu::amin(value.get(), e, dim_bit(1), out.get()), frugal::Error);
  CHECK_THROWS_AS(gpu::argmax(value.get(), e, 1, idx.get()), frugal::Error);
  CHECK_THROWS_AS(gpu::min_with_indices(value.get(), e, 1, out.get(), idx.get()), frugal::Error);
  // Zero outputs: nothing to do, and no error even for amax.
  gpu::sum(value.get(), e, dim_bit(0), out.get());
  gpu::amax(value.get(), e, dim_bit(0), out.get());
  gpu::argmax(value.get(), e, 0, idx.get());

  const StridedDims scalar{};
  DeviceBuffer<float> m(1);
  gpu::mean(value.get(), scalar, 0, m.get());
  gpu::argmax(value.get(), scalar, 0, idx.get());
  CHECK(m.download()[0] == 2.5f);
  CHECK(idx.download()[0] == 0);
}

TEST_CASE("cuda reduce: bad views, masks and dims are reported before any launch", "[cuda]") {
  const DeviceBuffer<float> x(std::vector<float>(6, 0.0f));
  const std::int64_t sizes[2] = {2, 3};
  const StridedDims d = cpu::contiguous_dims(2, sizes);
  DeviceBuffer<float> out(6);
  DeviceBuffer<std::int64_t> idx(6);
  CHECK_THROWS_AS(gpu::sum(x.get(), d, dim_bit(2), out.get()), frugal::Error);
  CHECK_THROWS_AS(gpu::argmax(x.get(), d, 2, idx.get()), frugal::Error);
  CHECK_THROWS_AS(gpu::argmin(x.get(), d, -1, idx.get()), frugal::Error);
  StridedDims bad = d;
  bad.ndim = 9;
  CHECK_THROWS_AS(gpu::sum(x.get(), bad, 1, out.get()), frugal::Error);
  bad = d;
  bad.sizes[1] = -3;
  CHECK_THROWS_WITH(gpu::sum(x.get(), bad, 1, out.get()), Catch::Contains("negative size"));
  CHECK_THROWS_WITH(gpu::var(x.get(), bad, 1, 1.0, out.get()), Catch::Contains("var"));
}

TEST_CASE("cuda reduce: more outputs than one launch's grid covers", "[cuda]") {
  // blocks_for caps a launch at 65536 blocks: 600001 outputs of a warp each (8 per block) and
  // 2100001 column outputs (65626 tiles of 32) take more than one pass of the kernels' loops.
  const View rows = make_view({600001, 3}, {0, 1}), cols = make_view({3, 2100001}, {0, 1});
  const auto x = values_for<float>(static_cast<std::size_t>(rows.storage), 900);
  check_any_reductions<float>(x, rows.dims, dim_bit(1), describe(rows, dim_bit(1)));
  check_float_reductions<float>(x, rows.dims, dim_bit(1), 1.0, describe(rows, dim_bit(1)));
  check_index_reductions<float>(x, rows.dims, 1, describe(rows, dim_bit(1)));
  const auto y = values_for<float>(static_cast<std::size_t>(cols.storage), 901);
  check_any_reductions<float>(y, cols.dims, dim_bit(0), describe(cols, dim_bit(0)));
  check_float_reductions<float>(y, cols.dims, dim_bit(0), 1.0, describe(cols, dim_bit(0)));
  check_index_reductions<float>(y, cols.dims, 0, describe(cols, dim_bit(0)));
}
