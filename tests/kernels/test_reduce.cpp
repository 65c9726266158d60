// Reductions against a naive gather-then-reduce reference: strided and transposed inputs,
// many dim sets, both loops (rows and columns), ties and NaN in the index reductions, integer
// types, 16-bit floats, accuracy of long float sums, and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce.h"

using namespace frugal;
using namespace frugal::kernels::cpu;

namespace {

// A view of a buffer: the buffer holds the tensor contiguously in the order `perm` (perm[0]
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

// For each output (contiguous over kept dims), the reduced values in row-major order of the
// reduced dims.
template <class T>
std::vector<std::vector<double>> gather(const T* in, const StridedDims& d, std::uint32_t mask) {
  std::int64_t out_n = 1, total = 1;
  for (int i = 0; i < d.ndim; ++i) {
    total *= d.sizes[i];
    if (!(mask & dim_bit(i))) out_n *= d.sizes[i];
  }
  std::vector<std::vector<double>> groups(static_cast<std::size_t>(out_n));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(d.ndim), 0);
  for (std::int64_t e = 0; e < total; ++e) {
    std::int64_t rest = e, off = 0, o = 0;
    for (int i = d.ndim - 1; i >= 0; --i) {
      idx[static_cast<std::size_t>(i)] = rest % d.sizes[i];
      rest /= d.sizes[i];
    }
    for (int i = 0; i < d.ndim; ++i) {
      off += idx[static_cast<std::size_t>(i)] * d.strides[i];
      if (!(mask & dim_bit(i))) o = o * d.sizes[i] + idx[static_cast<std::size_t>(i)];
    }
    groups[static_cast<std::size_t>(o)].push_back(static_cast<double>(in[off]));
  }
  return groups;
}

double naive_var(const std::vector<double>& g, double correction) {
  double m = 0;
  for (double x : g) m += x;
  m /= static_cast<double>(g.size());
  double s = 0;
  for (double x : g) s += (x - m) * (x - m);
  return s / std::max(0.0, static_cast<double>(g.size()) - correction);
}

template <class T>
std::vector<T> random_buffer(std::int64_t n, std::mt19937& rng, bool small_ints = false) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::uniform_int_distribution<int> k(-3, 3);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(small_ints ? k(rng) : u(rng));
  return v;
}

template <class T>
void check_float_reductions(const View& view, std::uint32_t mask, std::mt19937& rng, double tol) {
  const auto buf = random_buffer<T>(view.storage, rng);
  const auto groups = gather(buf.data(), view.dims, mask);
  const std::size_t n = groups.size();
  std::vector<T> s(n), m(n), mx(n), mn(n), v(n), vm(n);
  sum(buf.data(), view.dims, mask, s.data());
  mean(buf.data(), view.dims, mask, m.data());
  amax(buf.data(), view.dims, mask, mx.data());
  amin(buf.data(), view.dims, mask, mn.data());
  var(buf.data(), view.dims, mask, 1.0, v.data(), vm.data());
  for (std::size_t o = 0; o < n; ++o) {
    const auto& g = groups[o];
    double ref_sum = 0, ref_max = -INFINITY, ref_min = INFINITY;
    for (double x : g) {
      ref_sum += x;
      ref_max = std::max(ref_max, x);
      ref_min = std::min(ref_min, x);
    }
    const double count = static_cast<double>(g.size());
    CHECK(static_cast<double>(s[o]) == Approx(ref_sum).margin(tol * count).epsilon(tol));
    CHECK(static_cast<double>(m[o]) == Approx(ref_sum / count).margin(tol).epsilon(tol));
    CHECK(static_cast<double>(vm[o]) == Approx(ref_sum / count).margin(tol).epsilon(tol));
    CHECK(static_cast<double>(mx[o]) == ref_max);
    CHECK(static_cast<double>(mn[o]) == ref_min);
    if (g.size() > 1) CHECK(static_cast<double>(v[o]) == Approx(naive_var(g, 1)).epsilon(tol));
  }
}

template <class T>
void check_index_reductions(const View& view, int dim, std::mt19937& rng) {
  auto buf = random_buffer<T>(view.storage, rng, /*small_ints=*/true);  // many ties
  const auto groups = gather(buf.data(), view.dims, dim_bit(dim));
  const std::size_t n = groups.size();
  std::vector<std::int64_t> amx(n), amn(n), imx(n), imn(n);
  std::vector<T> vmx(n), vmn(n);
  argmax(buf.data(), view.dims, dim, amx.data());
  argmin(buf.data(), view.dims, dim, amn.data());
  max_with_indices(buf.data(), view.dims, dim, vmx.data(), imx.data());
  min_with_indices(buf.data(), view.dims, dim, vmn.data(), imn.data());
  for (std::size_t o = 0; o < n; ++o) {
    const auto& g = groups[o];
    std::int64_t bi = 0, si = 0;
    for (std::size_t i = 1; i < g.size(); ++i) {
      if (g[i] > g[static_cast<std::size_t>(bi)]) bi = static_cast<std::int64_t>(i);
      if (g[i] < g[static_cast<std::size_t>(si)]) si = static_cast<std::int64_t>(i);
    }
    CHECK(amx[o] == bi);
    CHECK(imx[o] == bi);
    CHECK(amn[o] == si);
    CHECK(imn[o] == si);
    CHECK(static_cast<double>(vmx[o]) == g[static_cast<std::size_t>(bi)]);
    CHECK(static_cast<double>(vmn[o]) == g[static_cast<std::size_t>(si)]);
  }
}

std::vector<View> layouts() {
  return {
      make_view({5, 7, 9}, {0, 1, 2}),               // contiguous
      make_view({5, 7, 9}, {2, 1, 0}),               // fully transposed
      make_view({4, 6, 3, 10}, {0, 3, 1, 2}),        // channels-last-like
      make_view({6, 1, 33, 4}, {1, 0, 3, 2}, 2, 3),  // a size-1 dim and a stepped slice
      make_view({3, 130, 17}, {2, 0, 1}),            // lanes wider than one column block
  };
}

}  // namespace

TEST_CASE("float and double reductions match the naive reference over every dim set", "[reduce]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(42);
    for (const View& v : layouts()) {
      const std::uint32_t all = (1u << v.dims.ndim) - 1;
      for (std::uint32_t mask = 0; mask <= all; ++mask) {
        INFO("threads " << threads << " ndim " << v.dims.ndim << " mask " << mask);
        check_float_reductions<double>(v, mask, rng, 1e-12);
        check_float_reductions<float>(v, mask, rng, 1e-5);
      }
    }
  }
  set_num_threads(2);
}

TEST_CASE("index reductions take the first of tied values along one dim", "[reduce]") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::mt19937 rng(7);
    for (const View& v : layouts())
      for (int dim = 0; dim < v.dims.ndim; ++dim) {
        INFO("threads " << threads << " dim " << dim);
        check_index_reductions<float>(v, dim, rng);
        check_index_reductions<double>(v, dim, rng);
        check_index_reductions<std::int32_t>(v, dim, rng);
        check_index_reductions<std::int64_t>(v, dim, rng);
      }
  }
  set_num_threads(2);
}

TEST_CASE("NaN propagates through amax/amin and wins the index reductions", "[reduce]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows of 40 (long enough for the vector lanes), a NaN at column 25 of row 1 only.
  const std::int64_t sizes[2] = {3, 40};
  std::vector<float> x(120);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  x[40 + 25] = nan;
  x[40 + 30] = nan;
  for (const View& v : {View{contiguous_dims(2, sizes), 120}, make_view({3, 40}, {1, 0})}) {
    std::vector<float> data = x;
    if (v.dims.strides[0] == 1) {  // transposed storage: same logical values
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 40; ++c) data[static_cast<std::size_t>(c * 3 + r)] = x[r * 40 + c];
    }
    float mx[3], mn[3], vals[3];
    std::int64_t am[3], an[3], idx[3];
    amax(data.data(), v.dims, dim_bit(1), mx);
    amin(data.data(), v.dims, dim_bit(1), mn);
    argmax(data.data(), v.dims, 1, am);
    argmin(data.data(), v.dims, 1, an);
    max_with_indices(data.data(), v.dims, 1, vals, idx);
    CHECK(mx[0] == 6.0f);
    CHECK(std::isnan(mx[1]));
    CHECK(std::isnan(mn[1]));
    CHECK(mn[2] == 0.0f);
    CHECK(am[1] == 25);
    CHECK(an[1] == 25);
    CHECK(idx[1] == 25);
    CHECK(std::isnan(vals[1]));
    CHECK(am[0] == 6);  // first 6 in a row of i % 7
    float total;
    amax(data.data(), v.dims, dim_bit(0) | dim_bit(1), &total);
    CHECK(std::isnan(total));
  }
}

TEST_CASE("a long float sum and mean stay accurate, whichever thread count", "[reduce]") {
  const std::int64_t n = 10'000'000;
  std::vector<float> ones(static_cast<std::size_t>(n), 1.0f);
  const StridedDims d = contiguous_dims(1, &n);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    float s, m, v;
    sum(ones.data(), d, 1, &s);
    mean(ones.data(), d, 1, &m);
    var(ones.data(), d, 1, 1.0, &v);
    CHECK(s == 1e7f);
    CHECK(m == 1.0f);
    CHECK(v == 0.0f);
  }
  // 0.1 is inexact in float: a float accumulator would drift by percent here.
  std::vector<float> tenths(static_cast<std::size_t>(n), 0.1f);
  const std::int64_t sizes2[2] = {2, n / 2};
  float halves[2];
  sum(tenths.data(), contiguous_dims(2, sizes2), dim_bit(1), halves);
  CHECK(halves[0] == Approx(0.5e6).epsilon(1e-6));
  set_num_threads(2);
}

TEST_CASE("column reductions: a bias gradient and per-channel NCHW sums", "[reduce]") {
  std::mt19937 rng(3);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const std::int64_t nc[2] = {300, 257};
    auto x = random_buffer<float>(300 * 257, rng);
    std::vector<float> out(257);
    sum(x.data(), contiguous_dims(2, nc), dim_bit(0), out.data());
    for (int c = 0; c < 257; ++c) {
      double ref = 0;
      for (int n = 0; n < 300; ++n) ref += x[static_cast<std::size_t>(n * 257 + c)];
      CHECK(out[static_cast<std::size_t>(c)] == Approx(ref).margin(1e-4));
    }
    const std::int64_t nchw[4] = {8, 5, 9, 11};
    auto y = random_buffer<double>(8 * 5 * 9 * 11, rng);
    std::vector<double> ch(5), chv(5);
    sum(y.data(), contiguous_dims(4, nchw), dim_bit(0) | dim_bit(2) | dim_bit(3), ch.data());
    var(y.data(), contiguous_dims(4, nchw), dim_bit(0) | dim_bit(2) | dim_bit(3), 0.0, chv.data());
    const auto groups = gather(y.data(), contiguous_dims(4, nchw), 0b1101);
    for (std::size_t c = 0; c < 5; ++c) {
      double ref = 0;
      for (double v : groups[c]) ref += v;
      CHECK(ch[c] == Approx(ref).epsilon(1e-12));
      CHECK(chv[c] == Approx(naive_var(groups[c], 0)).epsilon(1e-12));
    }
  }
  set_num_threads(2);
}

TEST_CASE("integer and bool reductions", "[reduce]") {
  std::mt19937 rng(5);
  const View v = make_view({6, 35}, {1, 0});
  std::vector<std::int32_t> a(210);
  std::vector<std::uint8_t> b(210);
  std::vector<char> flags(210);
  for (std::size_t i = 0; i < 210; ++i) {
    a[i] = static_cast<std::int32_t>(rng() % 2001) - 1000;
    b[i] = static_cast<std::uint8_t>(rng() % 256);
    flags[i] = static_cast<char>(rng() % 2);
  }
  bool bools[210];
  for (std::size_t i = 0; i < 210; ++i) bools[i] = flags[i] != 0;
  for (std::uint32_t mask : {1u, 2u, 3u}) {
    const auto ga = gather(a.data(), v.dims, mask);
    const auto gb = gather(b.data(), v.dims, mask);
    const auto gf = gather(bools, v.dims, mask);
    std::vector<std::int64_t> sa(ga.size()), sb(ga.size()), sf(ga.size());
    std::vector<std::int32_t> ma(ga.size());
    std::vector<std::uint8_t> mb(ga.size());
    std::vector<char> anyf(ga.size());
    sum(a.data(), v.dims, mask, sa.data());
    sum(b.data(), v.dims, mask, sb.data());
    sum(bools, v.dims, mask, sf.data());
    amin(a.data(), v.dims, mask, ma.data());
    amax(b.data(), v.dims, mask, mb.data());
    bool any[35];
    amax(bools, v.dims, mask, any);
    for (std::size_t o = 0; o < ga.size(); ++o) {
      double ra = 0, rb = 0, rf = 0, mina = 1e9, maxb = -1, anyr = 0;
      for (std::size_t i = 0; i < ga[o].size(); ++i) {
        ra += ga[o][i];
        rb += gb[o][i];
        rf += gf[o][i];
        mina = std::min(mina, ga[o][i]);
        maxb = std::max(maxb, gb[o][i]);
        anyr = std::max(anyr, gf[o][i]);
      }
      CHECK(static_cast<double>(sa[o]) == ra);
      CHECK(static_cast<double>(sb[o]) == rb);
      CHECK(static_cast<double>(sf[o]) == rf);
      CHECK(static_cast<double>(ma[o]) == mina);
      CHECK(static_cast<double>(mb[o]) == maxb);
      CHECK((any[o] ? 1.0 : 0.0) == anyr);
    }
  }
}

TEST_CASE("16-bit float reductions compute in float", "[reduce]") {
  std::mt19937 rng(11);
  const View v = make_view({12, 70}, {1, 0});
  auto h = random_buffer<Half>(v.storage, rng);
  auto bf = random_buffer<BFloat16>(v.storage, rng);
  for (std::uint32_t mask : {1u, 2u}) {
    const auto gh = gather(h.data(), v.dims, mask);
    const auto gbf = gather(bf.data(), v.dims, mask);
    std::vector<Half> sh(gh.size()), vh(gh.size());
    std::vector<BFloat16> mbf(gh.size()), xbf(gh.size());
    std::vector<std::int64_t> ih(gh.size());
    sum(h.data(), v.dims, mask, sh.data());
    var(h.data(), v.dims, mask, 1.0, vh.data());
    mean(bf.data(), v.dims, mask, mbf.data());
    amax(bf.data(), v.dims, mask, xbf.data());
    argmax(h.data(), v.dims, mask == 1u ? 0 : 1, ih.data());
    for (std::size_t o = 0; o < gh.size(); ++o) {
      double s = 0, sbf = 0, mbf_ref = -INFINITY;
      for (double x : gh[o]) s += x;
      for (double x : gbf[o]) {
        sbf += x;
        mbf_ref = std::max(mbf_ref, x);
      }
      CHECK(static_cast<float>(sh[o]) == Approx(s).margin(0.05).epsilon(2e-3));
      CHECK(static_cast<float>(vh[o]) == Approx(naive_var(gh[o], 1)).epsilon(2e-3));
      CHECK(static_cast<float>(mbf[o]) ==
            Approx(sbf / static_cast<double>(gbf[o].size())).margin(0.01).epsilon(1e-2));
      CHECK(static_cast<float>(xbf[o]) == mbf_ref);
      CHECK(gh[o][static_cast<std::size_t>(ih[o])] ==
            *std::max_element(gh[o].begin(), gh[o].end()));
    }
  }
}

TEST_CASE("broadcast (stride 0) inputs, empty reductions and scalars", "[reduce]") {
  const float value = 2.5f;
  StridedDims b;
  b.ndim = 2;
  b.sizes[0] = 1000;
  b.sizes[1] = 3;  // strides stay 0: one element seen 3000 times
  float s[3], total, m;
  sum(&value, b, dim_bit(0), s);
  sum(&value, b, dim_bit(0) | dim_bit(1), &total);
  CHECK(s[0] == 2500.0f);
  CHECK(total == 7500.0f);

  const std::int64_t empty_sizes[2] = {3, 0};
  const StridedDims e = contiguous_dims(2, empty_sizes);
  float out[3] = {-1, -1, -1};
  sum(&value, e, dim_bit(1), out);
  CHECK(out[2] == 0.0f);
  mean(&value, e, dim_bit(1), out);
  CHECK(std::isnan(out[0]));
  CHECK_THROWS_AS(amax(&value, e, dim_bit(1), out), frugal::Error);
  std::int64_t idx[3];
  CHECK_THROWS_AS(argmax(&value, e, 1, idx), frugal::Error);
  sum(&value, e, dim_bit(0), out);  // zero outputs: nothing to do

  const StridedDims scalar{};
  mean(&value, scalar, 0, &m);
  CHECK(m == 2.5f);
  argmax(&value, scalar, 0, idx);
  CHECK(idx[0] == 0);
}

TEST_CASE("bad views, masks and dims are reported", "[reduce]") {
  const float x[6] = {};
  const std::int64_t sizes[2] = {2, 3};
  const StridedDims d = contiguous_dims(2, sizes);
  float out[6];
  std::int64_t idx[6];
  CHECK_THROWS_AS(sum(x, d, dim_bit(2), out), frugal::Error);
  CHECK_THROWS_AS(argmax(x, d, 2, idx), frugal::Error);
  CHECK_THROWS_AS(argmin(x, d, -1, idx), frugal::Error);
  StridedDims bad = d;
  bad.ndim = 9;
  CHECK_THROWS_AS(sum(x, bad, 1, out), frugal::Error);
  bad = d;
  bad.sizes[1] = -3;
  CHECK_THROWS_WITH(sum(x, bad, 1, out), Catch::Contains("negative size"));
}
