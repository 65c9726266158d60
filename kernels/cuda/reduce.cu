// The CUDA reductions as ops over one launch (reduce_launch.cuh: the CPU's plan, then a row or
// a column kernel): sum and mean, amax and amin, argmax and argmin, var, each op's accumulator.
#include "kernels/cuda/reduce.h"

#include <limits>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/reduce_launch.cuh"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

using cpu::detail::ReducePlan;

// ---------------------------------------------------------------------------------------
// The ops.
// ---------------------------------------------------------------------------------------

// sum and mean: double accumulation for floating types (float32 included: a double per
// thread and a double tree match the CPU's double sums at float rounding, and the extra
// cost hides behind the memory reads), int64 for integers and bool.
template <class T>
struct SumOp {
  using C = compute_t<T>;
  static constexpr bool kFloating = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloating, double, std::int64_t>;
  using Local = Acc;
  void* out;
  bool mean;

  __device__ Local init() const { return 0; }
  __device__ Acc identity() const { return 0; }
  __device__ void fold(Local& a, const T* p, std::int64_t) const { a += static_cast<Acc>(load(p)); }
  __device__ Acc finish(const Local& a) const { return a; }
  __device__ void combine(Acc& a, const Acc& b) const { a += b; }
  __device__ void write(std::int64_t o, const Acc& a, std::int64_t count) const {
    if constexpr (kFloating) {
      const double v = mean ? a / static_cast<double>(count) : a;
      store(static_cast<T*>(out) + o, static_cast<C>(v));  // sum_t<T> is T here
    } else {
      static_cast<std::int64_t*>(out)[o] = a;
    }
  }
};

// amax / amin: a NaN anywhere wins.
template <class T, bool kMax>
struct ExtremeOp {
  using C = compute_t<T>;
  using Acc = C;
  using Local = C;
  T* out;

  __device__ Local init() const { return extreme_init<C, kMax>(); }
  __device__ Acc identity() const { return init(); }
  __device__ void fold(Local& a, const T* p, std::int64_t) const { combine(a, load(p)); }
  __device__ Acc finish(const Local& a) const { return a; }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (better<C, kMax>(b, a) || is_nan(b)) a = b;
  }
  __device__ void write(std::int64_t o, const Acc& a, std::int64_t) const { store(out + o, a); }
};

// argmax / argmin and the value-and-index forms: first index on ties, first NaN wins. A
// thread folds increasing positions, so it keeps its first; combine decides by index.
template <class T, bool kMax>
struct ArgOp {
  using C = compute_t<T>;
  struct Acc {
    C value;
    std::int64_t index;  // -1: no position seen
  };
  using Local = Acc;
  T* values;
  std::int64_t* indices;

  __device__ Local init() const { return Acc{C{}, -1}; }
  __device__ Acc identity() const { return init(); }
  __device__ void fold(Local& a, const T* p, std::int64_t r) const {
    const C v = load(p);
    if (a.index < 0 || (!is_nan(a.value) && (is_nan(v) || better<C, kMax>(v, a.value))))
      a = Acc{v, r};
  }
  __device__ Acc finish(const Local& a) const { return a; }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.index < 0) return;
    if (a.index < 0) {
      a = b;
      return;
    }
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    const bool take = a_nan || b_nan ? b_nan && (!a_nan || b.index < a.index)
                                     : better<C, kMax>(b.value, a.value) ||
                                           (b.value == a.value && b.index < a.index);
    if (take) a = b;
  }
  __device__ void write(std::int64_t o, const Acc& a, std::int64_t) const {
    if (values) store(values + o, a.value);
    if (indices) indices[o] = a.index;
  }
};

// Variance. Each thread keeps sums of (x - shift) and (x - shift)^2 in double with its first
// value as the shift (no division per element, and no cancellation worth speaking of, since
// the shift is one of the values); threads merge (count, mean, m2) with Chan's formula.
struct Moments {
  double count, mean, m2;
};

template <class T>
struct VarOp {
  using C = compute_t<T>;
  struct Local {
    double n, shift, s1, s2;
  };
  using Acc = Moments;
  T* out;
  T* mean_out;
  double correction;

  __device__ Local init() const { return Local{0, 0, 0, 0}; }
  __device__ Acc identity() const { return Moments{0, 0, 0}; }
  __device__ void fold(Local& l, const T* p, std::int64_t) const {
    const double x = static_cast<double>(load(p));
    if (l.n == 0) l.shift = x;
    const double d = x - l.shift;
    l.s1 += d;
    l.s2 += d * d;
    l.n += 1;
  }
  __device__ Acc finish(const Local& l) const {
    if (l.n == 0) return identity();
    double m2 = l.s2 - l.s1 * (l.s1 / l.n);
    if (m2 < 0) m2 = 0;  // rounding; a NaN stays NaN
    return Moments{l.n, l.shift + l.s1 / l.n, m2};
  }
  __device__ void combine(Acc& a, const Acc& b) const {
    if (b.count == 0) return;
    if (a.count == 0) {
      a = b;
      return;
    }
    const double total = a.count + b.count;
    const double delta = b.mean - a.mean;
    a.mean += delta * (b.count / total);
    a.m2 += b.m2 + delta * delta * (a.count * (b.count / total));
    a.count = total;
  }
  __device__ void write(std::int64_t o, const Acc& a, std::int64_t count) const {
    const double dof = fmax(0.0, static_cast<double>(count) - correction);
    store(out + o, static_cast<C>(a.m2 / dof));
    if (mean_out) store(mean_out + o, static_cast<C>(a.mean));
  }
};

template <class T, bool kMax>
void arg_reduce(const T* in, const StridedDims& in_dims, int dim, T* values, std::int64_t* indices,
                const char* op) {
  const ReducePlan p =
      cpu::detail::plan_reduction(in_dims, cpu::detail::single_dim_mask(in_dims, dim, op), op);
  cpu::detail::check_nonempty(p, op);
  launch_reduction(p, ArgOp<T, kMax>{values, indices}, in);
}

}  // namespace

template <class T>
void sum(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, sum_t<T>* out) {
  const ReducePlan p = cpu::detail::plan_reduction(in_dims, reduce_mask, "sum");
  if (p.red_numel == 0) {
    // Zero bits are 0 in every sum type.
    if (p.out_numel > 0)
      FRUGAL_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(sum_t<T>) * p.out_numel, stream()));
    return;
  }
  launch_reduction(p, SumOp<T>{out, false}, in);
}

template <class T>
void mean(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = cpu::detail::plan_reduction(in_dims, reduce_mask, "mean");
  if (p.red_numel == 0) return fill(out, p.out_numel, quiet_nan<T>());
  launch_reduction(p, SumOp<T>{out, true}, in);
}

template <class T>
void amax(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = cpu::detail::plan_reduction(in_dims, reduce_mask, "amax");
  cpu::detail::check_nonempty(p, "amax");
  launch_reduction(p, ExtremeOp<T, true>{out}, in);
}

template <class T>
void amin(const T* in, const StridedDims& in_dims, std::uint32_t reduce_mask, T* out) {
  const ReducePlan p = cpu::detail::plan_reduction(in_dims, reduce_mask, "amin");
  cpu::detail::check_nonempty(p, "amin");
  launch_reduction(p, ExtremeOp<T, false>{out}, in);
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
  const ReducePlan p = cpu::detail::plan_reduction(in_dims, reduce_mask, "var");
  if (p.red_numel == 0) {
    fill(out, p.out_numel, quiet_nan<T>());
    if (mean_out) fill(mean_out, p.out_numel, quiet_nan<T>());
    return;
  }
  launch_reduction(p, VarOp<T>{out, mean_out, correction}, in);
}

FRUGAL_ALL_TYPES(FRUGAL_INSTANTIATE_REDUCE_ANY)

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_REDUCE_FLOATING)

}  // namespace frugal::kernels::cuda
