// The CUDA elementwise kernels: one thread per element (grid-stride), each operand's address
// computed from the linear index and its byte strides, with a fast path when every operand
// is contiguous. Formulas are those of kernels/cpu/elementwise.cpp; 16-bit types compute in float.
#include "kernels/cuda/elementwise.h"

#include <cmath>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

// Operand k's byte offset for linear (row-major) element i of the loop's shape.
__device__ __forceinline__ std::int64_t operand_offset(const StridedLoop& loop, int k,
                                                       std::int64_t i) {
  std::int64_t offset = 0;
  for (int d = loop.ndim - 1; d >= 0; --d) {
    const std::int64_t size = loop.sizes[d];
    offset += (i % size) * loop.strides[k][d];
    i /= size;
  }
  return offset;
}

// Operand k of element i: contiguous operands are indexed directly.
template <bool Contiguous, class T>
__device__ __forceinline__ T* operand(const StridedLoop& loop, int k, std::int64_t i) {
  if constexpr (Contiguous)
    return reinterpret_cast<T*>(loop.data[k]) + i;
  else
    return reinterpret_cast<T*>(loop.data[k] + operand_offset(loop, k, i));
}

// Whether every operand is dense row-major with the given element sizes (so linear index i
// is element i of each).
bool all_contiguous(const StridedLoop& loop, const std::int64_t* element_sizes) {
  for (int k = 0; k < loop.nops; ++k) {
    std::int64_t expected = element_sizes[k];
    for (int d = loop.ndim - 1; d >= 0; --d) {
      if (loop.sizes[d] != 1 && loop.strides[k][d] != expected) return false;
      expected *= loop.sizes[d];
    }
  }
  return true;
}

// Launches kernel<true> or kernel<false> over the loop's elements.
template <class Launch>
void launch(const StridedLoop& loop, std::initializer_list<std::int64_t> element_sizes, Launch go) {
  const std::int64_t n = loop.numel();
  if (n == 0) return;
  if (all_contiguous(loop, element_sizes.begin()))
    go(std::true_type{}, n);
  else
    go(std::false_type{}, n);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

// The floating type integer math goes through (std::exp(int) is a double on the CPU).
template <class C>
using fp_t = std::conditional_t<std::is_floating_point_v<C>, C, double>;

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// x < 0, spelled so that unsigned types draw no "pointless comparison" warning.
template <class C>
__device__ __forceinline__ bool negative(C x) {
  if constexpr (std::is_unsigned_v<C>)
    return false;
  else
    return x < C(0);
}

// a^b for integers as the CPU's static_cast<C>(std::pow(double(a), double(b))): glibc's pow
// is exact wherever the result is an integer below 2^53, so square-and-multiply matches it
// without relying on CUDA's pow (up to 2 ulp off, which truncation would turn into a - 1).
template <class C>
__device__ __forceinline__ C integer_pow(C a, C b) {
  if (negative(b)) {  // 1 / a^|b| truncates to 0 unless |a| == 1
    if (a == C(1)) return C(1);
    if constexpr (std::is_signed_v<C>) {
      if (a == C(-1)) return (b & 1) ? C(-1) : C(1);
    }
    return C(0);
  }
  // Unsigned, so overflow wraps instead of being undefined (the CPU's is undefined too).
  std::uint64_t result = 1, base = static_cast<std::uint64_t>(a);
  for (auto e = static_cast<std::uint64_t>(b); e > 0; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return static_cast<C>(result);
}

struct UnaryParams {
  double lo, hi;
  bool has_lo, has_hi;
};

template <class C>
__device__ __forceinline__ C unary_op(UnaryOp op, C x, const UnaryParams& p) {
  using F = fp_t<C>;
  switch (op) {
    case UnaryOp::Neg:
      return C(-x);
    case UnaryOp::Abs:
      return negative(x) ? C(-x) : x;
    case UnaryOp::Relu:
      return negative(x) ? C(0) : x;  // NaN passes through
    case UnaryOp::Square:
      return C(x * x);
    case UnaryOp::Sign:
      return C((C(0) < x) - negative(x));
    case UnaryOp::Reciprocal:
      return C(C(1) / x);
    case UnaryOp::Exp:
      return C(exp(static_cast<F>(x)));
    case UnaryOp::Log:
      return C(log(static_cast<F>(x)));
    case UnaryOp::Sqrt:
      return C(sqrt(static_cast<F>(x)));
    case UnaryOp::Tanh:
      return C(tanh(static_cast<F>(x)));
    case UnaryOp::Sigmoid:
      return C(F(1) / (F(1) + exp(-static_cast<F>(x))));
    case UnaryOp::Gelu:
      return C(0.5 * x * (1.0 + erf(static_cast<double>(x) * kInvSqrt2)));
    case UnaryOp::Clamp: {
      const C l = static_cast<C>(p.lo), h = static_cast<C>(p.hi);
      if (p.has_lo && x < l) x = l;
      if (p.has_hi && x > h) x = h;
      return x;
    }
  }
  return x;
}

template <class T, bool Contiguous>
__global__ void unary_kernel(UnaryOp op, StridedLoop loop, std::int64_t n, UnaryParams p) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const T* in = operand<Contiguous, T>(loop, 1, i);
    store(operand<Contiguous, T>(loop, 0, i), unary_op<compute_t<T>>(op, load(in), p));
  }
}

template <class C>
__device__ __forceinline__ C binary_op(BinaryOp op, C a, C b, C al, const UnaryParams& p) {
  switch (op) {
    case BinaryOp::Add:
      return C(a + al * b);
    case BinaryOp::Sub:
      return C(a - al * b);
    case BinaryOp::Mul:
      return C(a * b);
    case BinaryOp::Div:
      return C(a / b);
    case BinaryOp::Pow:
      if constexpr (std::is_integral_v<C>)
        return integer_pow(a, b);
      else
        return static_cast<C>(pow(a, b));
    case BinaryOp::ReluBackward:
      return b > C(0) ? a : C(0);
    case BinaryOp::SigmoidBackward:
      return C(a * b * (C(1) - b));
    case BinaryOp::TanhBackward:
      return C(a * (C(1) - b * b));
    case BinaryOp::GeluBackward: {
      const double xd = static_cast<double>(b);
      const double cdf = 0.5 * (1.0 + erf(xd * kInvSqrt2));
      const double pdf = kInvSqrt2Pi * exp(-0.5 * xd * xd);
      return C(static_cast<double>(a) * (cdf + xd * pdf));
    }
    case BinaryOp::ClampBackward: {
      const C l = static_cast<C>(p.lo), h = static_cast<C>(p.hi);
      return ((p.has_lo && b < l) || (p.has_hi && b > h)) ? C(0) : a;
    }
  }
  return a;
}

template <class T, bool Contiguous>
__global__ void binary_kernel(BinaryOp op, StridedLoop loop, std::int64_t n, compute_t<T> alpha,
                              UnaryParams p) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const auto a = load(operand<Contiguous, const T>(loop, 1, i));
    const auto b = load(operand<Contiguous, const T>(loop, 2, i));
    store(operand<Contiguous, T>(loop, 0, i), binary_op<compute_t<T>>(op, a, b, alpha, p));
  }
}

template <class T, bool Contiguous>
__global__ void compare_kernel(CompareOp op, StridedLoop loop, std::int64_t n) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const compute_t<T> a = load(operand<Contiguous, const T>(loop, 1, i));
    const compute_t<T> b = load(operand<Contiguous, const T>(loop, 2, i));
    bool r = false;
    switch (op) {
      case CompareOp::Eq:
        r = a == b;
        break;
      case CompareOp::Ne:
        r = a != b;
        break;
      case CompareOp::Lt:
        r = a < b;
        break;
      case CompareOp::Le:
        r = a <= b;
        break;
      case CompareOp::Gt:
        r = a > b;
        break;
      case CompareOp::Ge:
        r = a >= b;
        break;
    }
    *operand<Contiguous, bool>(loop, 0, i) = r;
  }
}

template <class T, bool Contiguous>
__global__ void where_kernel(StridedLoop loop, std::int64_t n) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    // Copied as T, not through the compute type: no rounding, NaN payloads kept.
    *operand<Contiguous, T>(loop, 0, i) = *operand<Contiguous, const bool>(loop, 1, i)
                                              ? *operand<Contiguous, const T>(loop, 2, i)
                                              : *operand<Contiguous, const T>(loop, 3, i);
  }
}

template <class T, bool Contiguous>
__global__ void fill_kernel(StridedLoop loop, std::int64_t n, T value) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) { *operand<Contiguous, T>(loop, 0, i) = value; }
}

// The CPU's conversion: to bool is "!= 0" in the source's precision (float for 16-bit types),
// 16-bit types go through float.
template <class Dst, class Src>
__device__ __forceinline__ void convert(Dst* out, const Src* in) {
  const auto v = load(in);  // float for Half/BFloat16
  if constexpr (std::is_same_v<Dst, bool>)
    *out = v != decltype(v)(0);
  else if constexpr (is_16bit_float_v<Dst>)
    store(out, static_cast<float>(v));
  else
    *out = static_cast<Dst>(v);
}

template <class Dst, class Src, bool Contiguous>
__global__ void cast_kernel(StridedLoop loop, std::int64_t n) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    convert(operand<Contiguous, Dst>(loop, 0, i), operand<Contiguous, const Src>(loop, 1, i));
  }
}

}  // namespace

template <class T>
void unary(UnaryOp op, const StridedLoop& loop, double lo, double hi) {
  const UnaryParams p{lo, hi, !std::isnan(lo), !std::isnan(hi)};
  constexpr std::int64_t e = sizeof(T);
  launch(loop, {e, e}, [&](auto contiguous, std::int64_t n) {
    unary_kernel<T, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(op, loop, n, p);
  });
}

template <class T>
void binary(BinaryOp op, const StridedLoop& loop, double alpha, double beta) {
  // ClampBackward's bounds are (alpha, beta); Add/Sub scale b by alpha.
  const UnaryParams p{alpha, beta, !std::isnan(alpha), !std::isnan(beta)};
  const compute_t<T> al = static_cast<compute_t<T>>(alpha);
  constexpr std::int64_t e = sizeof(T);
  launch(loop, {e, e, e}, [&](auto contiguous, std::int64_t n) {
    binary_kernel<T, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(op, loop, n, al, p);
  });
}

template <class T>
void compare(CompareOp op, const StridedLoop& loop) {
  constexpr std::int64_t e = sizeof(T);
  launch(loop, {1, e, e}, [&](auto contiguous, std::int64_t n) {
    compare_kernel<T, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(op, loop, n);
  });
}

template <class T>
void where(const StridedLoop& loop) {
  constexpr std::int64_t e = sizeof(T);
  launch(loop, {e, 1, e, e}, [&](auto contiguous, std::int64_t n) {
    where_kernel<T, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(loop, n);
  });
}

template <class T>
void fill(const StridedLoop& loop, T value) {
  constexpr std::int64_t e = sizeof(T);
  launch(loop, {e}, [&](auto contiguous, std::int64_t n) {
    fill_kernel<T, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(loop, n, value);
  });
}

template <class Dst, class Src>
void cast(const StridedLoop& loop) {
  launch(loop, {sizeof(Dst), sizeof(Src)}, [&](auto contiguous, std::int64_t n) {
    cast_kernel<Dst, Src, decltype(contiguous)::value>
        <<<blocks_for(n), kBlockSize, 0, stream()>>>(loop, n);
  });
}

FRUGAL_INSTANTIATE_ELEMENTWISE

}  // namespace frugal::kernels::cuda
