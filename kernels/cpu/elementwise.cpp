// The elementwise kernels. Each op is a small lambda on the compute type; run_unary and
// run_binary give it contiguous and broadcast-scalar fast paths that the compiler
// vectorises, and a general strided path. Transcendentals on contiguous float/double runs
// use Eigen's vectorised array functions.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/elementwise.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "common/half.h"
#include "kernels/cpu/convert.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

template <class T>
T load(const char* p) {
  return *reinterpret_cast<const T*>(p);
}

// Contiguous 16-bit runs go through float buffers of kChunk elements, converted 16 at a time
// (kernels/cpu/convert.h), so that the op itself runs on float vectors: element by element,
// each conversion would cost more than the op.
constexpr std::int64_t kChunk = 256;

template <class T, class F>
void run_unary(const StridedLoop& loop, F f) {
  using C = compute_t<T>;
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    constexpr std::int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e) {
      T* out = reinterpret_cast<T*>(p[0]);
      const T* in = reinterpret_cast<const T*>(p[1]);
      if constexpr (is_16bit_float_v<T>) {
        alignas(64) float x[kChunk], y[kChunk];
        for (std::int64_t i0 = 0; i0 < n; i0 += kChunk) {
          const std::int64_t len = std::min(kChunk, n - i0);
          to_float(in + i0, x, len);
          for (std::int64_t i = 0; i < len; ++i) y[i] = f(x[i]);
          from_float(y, out + i0, len);
        }
        return;
      }
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<C>(in[i])));
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            static_cast<T>(f(static_cast<C>(load<T>(p[1] + i * s[1]))));
    }
  });
}

template <class T, class F>
void run_binary(const StridedLoop& loop, F f) {
  using C = compute_t<T>;
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    constexpr std::int64_t e = sizeof(T);
    T* out = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    if (s[0] == e && s[1] == e && s[2] == e) {
      if constexpr (is_16bit_float_v<T>) {
        alignas(64) float x[kChunk], y[kChunk], z[kChunk];
        for (std::int64_t i0 = 0; i0 < n; i0 += kChunk) {
          const std::int64_t len = std::min(kChunk, n - i0);
          to_float(a + i0, x, len);
          to_float(b + i0, y, len);
          for (std::int64_t i = 0; i < len; ++i) z[i] = f(x[i], y[i]);
          from_float(z, out + i0, len);
        }
        return;
      }
      for (std::int64_t i = 0; i < n; ++i)
        out[i] = static_cast<T>(f(static_cast<C>(a[i]), static_cast<C>(b[i])));
    } else if (s[0] == e && s[1] == e && s[2] == 0) {
      const C bv = static_cast<C>(b[0]);
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(static_cast<C>(a[i]), bv));
    } else if (s[0] == e && s[1] == 0 && s[2] == e) {
      const C av = static_cast<C>(a[0]);
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(av, static_cast<C>(b[i])));
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = static_cast<T>(
            f(static_cast<C>(load<T>(p[1] + i * s[1])), static_cast<C>(load<T>(p[2] + i * s[2]))));
    }
  });
}

// ReLU's gradient on 16-bit data without widening: y > 0 exactly when y's bits, read as a
// signed 16-bit integer, lie in (0, +inf] (sign clear, not zero, not NaN), and g passes
// through as it is: on AVX-512, 32 lanes are two compares and a masked move.
template <class T>
void relu_backward_16bit(const StridedLoop& loop) {
  const std::int16_t inf_bits = std::is_same_v<T, BFloat16> ? 0x7f80 : 0x7c00;
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    auto at = [&](int k, std::int64_t i) {
      return reinterpret_cast<std::int16_t*>(p[k] + i * s[k]);
    };
    std::int64_t i = 0;
#if FRUGAL_CONVERT_AVX512
    constexpr std::int64_t e = sizeof(T);
    if (s[0] == e && s[1] == e && s[2] == e) {
      const __m512i zero = _mm512_setzero_si512(), inf = _mm512_set1_epi16(inf_bits);
      for (; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? ~__mmask32(0) : (__mmask32(1) << (n - i)) - 1;
        const __m512i y = _mm512_maskz_loadu_epi16(m, at(2, i));
        const __mmask32 pass =
            _mm512_mask_cmple_epi16_mask(_mm512_cmpgt_epi16_mask(y, zero), y, inf);
        _mm512_mask_storeu_epi16(at(0, i), m, _mm512_maskz_loadu_epi16(pass & m, at(1, i)));
      }
      return;
    }
#endif
    for (; i < n; ++i) {
      const std::int16_t y = *at(2, i);
      *at(0, i) = y > 0 && y <= inf_bits ? *at(1, i) : std::int16_t{0};
    }
  });
}

// Eigen's vectorised exp/log/tanh/logistic/sqrt on contiguous float and double runs.
template <class T, class EigenFn, class ScalarFn>
void run_unary_vectorised(const StridedLoop& loop, EigenFn eigen_fn, ScalarFn scalar_fn) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    for_each_run(loop, kElementwiseGrain,
                 [&](char* const* p, const std::int64_t* s, std::int64_t n) {
                   if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
                     using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
                     Eigen::Map<Array> out(reinterpret_cast<T*>(p[0]), n);
                     Eigen::Map<const Array> in(reinterpret_cast<const T*>(p[1]), n);
                     out = eigen_fn(in);
                   } else {
                     for (std::int64_t i = 0; i < n; ++i)
                       *reinterpret_cast<T*>(p[0] + i * s[0]) = scalar_fn(load<T>(p[1] + i * s[1]));
                   }
                 });
  } else {
    run_unary<T>(loop, scalar_fn);
  }
}

template <class C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace

template <class T>
void unary(UnaryOp op, const StridedLoop& loop, double lo, double hi) {
  using C = compute_t<T>;
  switch (op) {
    case UnaryOp::Neg:
      return run_unary<T>(loop, [](C x) { return C(-x); });
    case UnaryOp::Abs:
      return run_unary<T>(loop, [](C x) { return x < C(0) ? C(-x) : x; });
    case UnaryOp::Relu:  // NaN passes through, as in PyTorch
      return run_unary<T>(loop, [](C x) { return x < C(0) ? C(0) : x; });
    case UnaryOp::Square:
      return run_unary<T>(loop, [](C x) { return C(x * x); });
    case UnaryOp::Sign:
      return run_unary<T>(loop, [](C x) { return C((C(0) < x) - (x < C(0))); });
    case UnaryOp::Reciprocal:
      return run_unary<T>(loop, [](C x) { return C(C(1) / x); });
    case UnaryOp::Exp:
      return run_unary_vectorised<T>(
          loop, [](const auto& a) { return a.exp(); }, [](C x) { return C(std::exp(x)); });
    case UnaryOp::Log:
      return run_unary_vectorised<T>(
          loop, [](const auto& a) { return a.log(); }, [](C x) { return C(std::log(x)); });
    case UnaryOp::Sqrt:
      return run_unary_vectorised<T>(
          loop, [](const auto& a) { return a.sqrt(); }, [](C x) { return C(std::sqrt(x)); });
    case UnaryOp::Tanh:
      return run_unary_vectorised<T>(
          loop, [](const auto& a) { return a.tanh(); }, [](C x) { return C(std::tanh(x)); });
    case UnaryOp::Sigmoid:
      return run_unary_vectorised<T>(
          loop, [](const auto& a) { return a.logistic(); }, [](C x) { return sigmoid(x); });
    case UnaryOp::Gelu:
      return run_unary<T>(loop, [](C x) {
        return C(0.5 * x * (1.0 + std::erf(static_cast<double>(x) * kInvSqrt2)));
      });
    case UnaryOp::Clamp: {
      const bool has_lo = !std::isnan(lo), has_hi = !std::isnan(hi);
      const C l = static_cast<C>(lo), h = static_cast<C>(hi);
      return run_unary<T>(loop, [=](C x) {
        if (has_lo && x < l) x = l;
        if (has_hi && x > h) x = h;
        return x;
      });
    }
  }
}

template <class T>
void binary(BinaryOp op, const StridedLoop& loop, double alpha, double beta) {
  using C = compute_t<T>;
  const C al = static_cast<C>(alpha);
  switch (op) {
    case BinaryOp::Add:
      if (alpha == 1) return run_binary<T>(loop, [](C a, C b) { return C(a + b); });
      return run_binary<T>(loop, [=](C a, C b) { return C(a + al * b); });
    case BinaryOp::Sub:
      if (alpha == 1) return run_binary<T>(loop, [](C a, C b) { return C(a - b); });
      return run_binary<T>(loop, [=](C a, C b) { return C(a - al * b); });
    case BinaryOp::Mul:
      return run_binary<T>(loop, [](C a, C b) { return C(a * b); });
    case BinaryOp::Div:
      return run_binary<T>(loop, [](C a, C b) { return C(a / b); });
    case BinaryOp::Pow:
      return run_binary<T>(loop, [](C a, C b) { return static_cast<C>(std::pow(a, b)); });
    case BinaryOp::ReluBackward:
      if constexpr (is_16bit_float_v<T>) return relu_backward_16bit<T>(loop);
      return run_binary<T>(loop, [](C g, C y) { return y > C(0) ? g : C(0); });
    case BinaryOp::SigmoidBackward:
      return run_binary<T>(loop, [](C g, C y) { return C(g * y * (C(1) - y)); });
    case BinaryOp::TanhBackward:
      return run_binary<T>(loop, [](C g, C y) { return C(g * (C(1) - y * y)); });
    case BinaryOp::GeluBackward:
      return run_binary<T>(loop, [](C g, C x) {
        const double xd = static_cast<double>(x);
        const double cdf = 0.5 * (1.0 + std::erf(xd * kInvSqrt2));
        const double pdf = kInvSqrt2Pi * std::exp(-0.5 * xd * xd);
        return C(static_cast<double>(g) * (cdf + xd * pdf));
      });
    case BinaryOp::ClampBackward: {
      const bool has_lo = !std::isnan(alpha), has_hi = !std::isnan(beta);
      const C l = static_cast<C>(alpha), h = static_cast<C>(beta);
      return run_binary<T>(
          loop, [=](C g, C x) { return ((has_lo && x < l) || (has_hi && x > h)) ? C(0) : g; });
    }
  }
}

template <class T>
void compare(CompareOp op, const StridedLoop& loop) {
  using C = compute_t<T>;
  auto run = [&](auto f) {
    for_each_run(
        loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
          for (std::int64_t i = 0; i < n; ++i)
            *reinterpret_cast<bool*>(p[0] + i * s[0]) = f(static_cast<C>(load<T>(p[1] + i * s[1])),
                                                          static_cast<C>(load<T>(p[2] + i * s[2])));
        });
  };
  switch (op) {
    case CompareOp::Eq:
      return run([](C a, C b) { return a == b; });
    case CompareOp::Ne:
      return run([](C a, C b) { return a != b; });
    case CompareOp::Lt:
      return run([](C a, C b) { return a < b; });
    case CompareOp::Le:
      return run([](C a, C b) { return a <= b; });
    case CompareOp::Gt:
      return run([](C a, C b) { return a > b; });
    case CompareOp::Ge:
      return run([](C a, C b) { return a >= b; });
  }
}

template <class T>
void where(const StridedLoop& loop) {
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
      *reinterpret_cast<T*>(p[0] + i * s[0]) =
          load<bool>(p[1] + i * s[1]) ? load<T>(p[2] + i * s[2]) : load<T>(p[3] + i * s[3]);
  });
}

template <class T>
void fill(const StridedLoop& loop, T value) {
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    if (s[0] == sizeof(T)) {
      T* out = reinterpret_cast<T*>(p[0]);
      for (std::int64_t i = 0; i < n; ++i) out[i] = value;
    } else {
      for (std::int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = value;
    }
  });
}

template <class Dst, class Src>
void cast(const StridedLoop& loop) {
  for_each_run(loop, kElementwiseGrain, [&](char* const* p, const std::int64_t* s, std::int64_t n) {
    auto convert = [](Src v) {
      // To bool is "!= 0" in the source's own precision (a double of 1e-50 is true, as in
      // PyTorch); 16-bit types compare in float.
      if constexpr (std::is_same_v<Dst, bool> && is_16bit_float_v<Src>)
        return static_cast<float>(v) != 0.0f;
      else if constexpr (std::is_same_v<Dst, bool>)
        return v != Src(0);
      else if constexpr (std::is_same_v<Src, Half> || std::is_same_v<Src, BFloat16>)
        return static_cast<Dst>(static_cast<float>(v));
      else if constexpr (std::is_same_v<Dst, Half> || std::is_same_v<Dst, BFloat16>)
        return Dst(static_cast<float>(v));
      else
        return static_cast<Dst>(v);
    };
    if (s[0] == sizeof(Dst) && s[1] == sizeof(Src)) {
      Dst* out = reinterpret_cast<Dst*>(p[0]);
      const Src* in = reinterpret_cast<const Src*>(p[1]);
      // The casts autocast makes (weights and activations to 16 bits, gradients back): whole
      // vectors at a time.
      if constexpr (std::is_same_v<Src, float> && is_16bit_float_v<Dst>) {
        from_float(in, out, n);
        return;
      } else if constexpr (is_16bit_float_v<Src> && std::is_same_v<Dst, float>) {
        to_float(in, out, n);
        return;
      }
      for (std::int64_t i = 0; i < n; ++i) out[i] = convert(in[i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Dst*>(p[0] + i * s[0]) = convert(load<Src>(p[1] + i * s[1]));
    }
  });
}

FRUGAL_INSTANTIATE_ELEMENTWISE

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
