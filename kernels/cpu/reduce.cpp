// The reduction ops: each is a small accumulator type with a vectorisable run (a row of
// contiguous input) and a lane update (a block of columns); reduce_loops.h walks the input.
#include "kernels/cpu/reduce.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/accumulate.h"
#include "kernels/cpu/reduce_loops.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu {

namespace {

using detail::is_nan;
using detail::kLanes;
using detail::Moments;
using detail::ReducePlan;

// sum and mean: double accumulation for floating types, int64 for integers and bool.
template <class T>
struct SumOp {
  using C = compute_t<T>;
  static constexpr bool kFloating = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloating, double, std::int64_t>;
  void* out;
  bool mean;

  Acc init() const { return 0; }
  void run(Acc& a, const T* p, std::int64_t n, std::int64_t s, std::int64_t) const {
    if constexpr (kFloating) {
      a += detail::sum_run(p, n, s);
    } else {
      std::int64_t lanes[kLanes] = {};
      std::int64_t i = 0;
      if (s == 1)
        for (; i + kLanes <= n; i += kLanes)
          for (int k = 0; k < kLanes; ++k) lanes[k] += static_cast<std::int64_t>(p[i + k]);
      for (; i < n; ++i) a += static_cast<std::int64_t>(p[i * s]);
      for (int k = 0; k < kLanes; ++k) a += lanes[k];
    }
  }
  void combine(Acc& a, const Acc& b) const { a += b; }
  void col_update(Acc* acc, const T* p, std::int64_t ls, int w, std::int64_t) const {
    if (ls == 1) {
      for (int j = 0; j < w; ++j) acc[j] += static_cast<Acc>(static_cast<C>(p[j]));
    } else {
      for (int j = 0; j < w; ++j) acc[j] += static_cast<Acc>(static_cast<C>(p[j * ls]));
    }
  }
  void write(std::int64_t o, const Acc& a, std::int64_t count) const {
    if (mean) {
      static_cast<T*>(out)[o] = static_cast<T>(static_cast<C>(a / static_cast<double>(count)));
    } else {
      static_cast<sum_t<T>*>(out)[o] = static_cast<sum_t<T>>(a);
    }
  }
};

template <class C, bool kMax>
inline bool better(C v, C best) {
  if constexpr (kMax) {
    return v > best;
  } else {
    return v < best;
  }
}

// amax / amin; contiguous runs go through the vectorised detail::extreme_run.
template <class T, bool kMax>
struct ExtremeOp {
  using C = compute_t<T>;
  using Acc = C;
  T* out;

  Acc init() const { return detail::extreme_init<C, kMax>(); }
  void run(Acc& a, const T* p, std::int64_t n, std::int64_t s, std::int64_t) const {
    if (s == 1) {
      bool saw_nan;
      const C m = detail::extreme_run<T, kMax>(p, n, init(), &saw_nan);
      combine(a, saw_nan ? std::numeric_limits<C>::quiet_NaN() : m);
      return;
    }
    for (std::int64_t i = 0; i < n; ++i) combine(a, static_cast<C>(p[i * s]));
  }
  void combine(Acc& a, const Acc& b) const {
    if (better<C, kMax>(b, a) || is_nan(b)) a = b;
  }
  void col_update(Acc* acc, const T* p, std::int64_t ls, int w, std::int64_t) const {
    for (int j = 0; j < w; ++j) combine(acc[j], static_cast<C>(p[j * ls]));
  }
  void write(std::int64_t o, const Acc& a, std::int64_t) const { out[o] = static_cast<T>(a); }
};

// argmax / argmin and the value-and-index forms: first index on ties, first NaN wins.
template <class T, bool kMax>
struct ArgOp {
  using C = compute_t<T>;
  struct Acc {
    C value{};
    std::int64_t index = -1;
  };
  T* values;
  std::int64_t* indices;

  Acc init() const { return Acc{}; }
  void run(Acc& a, const T* p, std::int64_t n, std::int64_t s, std::int64_t index0) const {
    if (a.index >= 0 && is_nan(a.value)) return;
    if (s == 1 && n >= 2 * kLanes) {
      // Find the run's extreme vectorised, then its first position with an early-exit scan.
      bool saw_nan;
      const C m = detail::extreme_run<T, kMax>(p, n, detail::extreme_init<C, kMax>(), &saw_nan);
      if (a.index >= 0 && !saw_nan && !better<C, kMax>(m, a.value)) return;
      for (std::int64_t i = 0; i < n; ++i) {
        const C v = static_cast<C>(p[i]);
        if (saw_nan ? is_nan(v) : v == m) {
          a = Acc{v, index0 + i};
          return;
        }
      }
    }
    std::int64_t i = 0;
    if (a.index < 0) {
      a = Acc{static_cast<C>(p[0]), index0};
      i = 1;
    }
    if (is_nan(a.value)) return;
    for (; i < n; ++i) {
      const C v = static_cast<C>(p[i * s]);
      if (better<C, kMax>(v, a.value)) {
        a = Acc{v, index0 + i};
      } else if (is_nan(v)) {
        a = Acc{v, index0 + i};
        return;
      }
    }
  }
  void combine(Acc& a, const Acc& b) const {
    if (b.index < 0 || is_nan(a.value)) return;
    if (a.index < 0 || is_nan(b.value) || better<C, kMax>(b.value, a.value)) a = b;
  }
  void col_update(Acc* acc, const T* p, std::int64_t ls, int w, std::int64_t r) const {
    for (int j = 0; j < w; ++j) {
      const C v = static_cast<C>(p[j * ls]);
      if (r == 0 || (!is_nan(acc[j].value) && (is_nan(v) || better<C, kMax>(v, acc[j].value))))
        acc[j] = Acc{v, r};
    }
  }
  void write(std::int64_t o, const Acc& a, std::int64_t) const {
    if (values) values[o] = static_cast<T>(a.value);
    if (indices) indices[o] = a.index;
  }
};

// Two-pass moments per run, merged across runs; Welford per lane in the column loop.
template <class T>
struct VarOp {
  using C = compute_t<T>;
  using Acc = Moments;
  T* out;
  T* mean_out;
  double correction;

  Acc init() const { return Moments{}; }
  void run(Acc& a, const T* p, std::int64_t n, std::int64_t s, std::int64_t) const {
    a.merge(detail::run_moments(p, n, s));
  }
  void combine(Acc& a, const Acc& b) const { a.merge(b); }
  void col_update(Acc* acc, const T* p, std::int64_t ls, int w, std::int64_t r) const {
    const double count = static_cast<double>(r + 1);
    const double inv = 1.0 / count;
    for (int j = 0; j < w; ++j) {
      const double x = detail::to_double(p[j * ls]);
      const double d = x - acc[j].mean;
      acc[j].mean += d * inv;
      acc[j].m2 += d * (x - acc[j].mean);
      acc[j].count = count;
    }
  }
  void write(std::int64_t o, const Acc& a, std::int64_t count) const {
    const double dof = std::max(0.0, static_cast<double>(count) - correction);
    out[o] = static_cast<T>(static_cast<C>(a.m2 / dof));
    if (mean_out) mean_out[o] = static_cast<T>(static_cast<C>(a.mean));
  }
};

template <class U>
void fill(U* out, std::int64_t n, U value) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = value;
}

template <class T>
T quiet_nan() {
  return static_cast<T>(std::numeric_limits<compute_t<T>>::quiet_NaN());
}

template <class T, bool kMax>
void arg_reduce(const T* in, const StridedDims& in_dims, int dim, T* values, std::int64_t* indices,
                const char* op) {
  const ReducePlan p =
      detail::plan_reduction(in_dims, detail::single_dim_mask(in_dims, dim, op), op);
  detail::check_nonempty(p, op);
  detail::run_reduction(p, ArgOp<T, kMax>{values, indices}, in);
}

}  // namespace

template <class T>
void sum(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, sum_t<T>* out) {
  const ReducePlan p = detail::plan_reduction(in_dims, reduce_mask, "sum");
  if (p.red_numel == 0) return fill(out, p.out_numel, sum_t<T>(0));
  detail::run_reduction(p, SumOp<T>{out, false}, in);
}

template <class T>
void mean(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = detail::plan_reduction(in_dims, reduce_mask, "mean");
  if (p.red_numel == 0) return fill(out, p.out_numel, quiet_nan<T>());
  detail::run_reduction(p, SumOp<T>{out, true}, in);
}

template <class T>
void amax(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = detail::plan_reduction(in_dims, reduce_mask, "amax");
  detail::check_nonempty(p, "amax");
  detail::run_reduction(p, ExtremeOp<T, true>{out}, in);
}

template <class T>
void amin(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = detail::plan_reduction(in_dims, reduce_mask, "amin");
  detail::check_nonempty(p, "amin");
  detail::run_reduction(p, ExtremeOp<T, false>{out}, in);
}

template <class T>
void argmax(const T* in, const StridedDims& in_dims, int dim, std::int64_t* out) {
  arg_reduce<T, true>(in, in_dims, dim, nullptr, out, "argmax");
}

template <class T>
void argmin(const T* in, const StridedDims& in_dims, int dim, std::int64_t* out) {
  arg_reduce<T, false>(in, in_dims, dim, nullptr, out, "argmin");
}

template <class T>
void max_with_indices(const T* in, const StridedDims& in_dims, int dim, T* values,
                      std::int64_t* indices) {
  arg_reduce<T, true>(in, in_dims, dim, values, indices, "max");
}

template <class T>
void min_with_indices(const T* in, const StridedDims& in_dims, int dim, T* values,
                      std::int64_t* indices) {
  arg_reduce<T, false>(in, in_dims, dim, values, indices, "min");
}

template <class T>
void var(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, double correction,
         T* out, T* mean_out) {
  const ReducePlan p = detail::plan_reduction(in_dims, reduce_mask, "var");
  if (p.red_numel == 0) {
    fill(out, p.out_numel, quiet_nan<T>());
    if (mean_out) fill(mean_out, p.out_numel, quiet_nan<T>());
    return;
  }
  detail::run_reduction(p, VarOp<T>{out, mean_out, correction}, in);
}

FRUGAL_ALL_TYPES(FRUGAL_INSTANTIATE_REDUCE_ANY)

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_REDUCE_FLOATING)

}  // namespace frugal::kernels::cpu
