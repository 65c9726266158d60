// Depthwise convolution (groups == C == O) computed directly, one channel plane at a time
// (strided layers in float on AVX-512 go to conv_depthwise_blocked.cpp instead).
// The trick: split the zero-padded plane into stride_h x stride_w "phase" planes (phase
// (r, q) holds padded pixels (i*sh + r, j*sw + q)). Then every kernel tap reads one phase
// plane at a fixed flat offset, so a whole output plane is a sum of shifted, contiguous rows:
// long loops the compiler vectorises, whatever the stride. Rows are computed Wq wide (the
// last columns are junk, dropped on store) so that one flat loop covers the whole plane.
#include "kernels/cpu/isa_variant.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/conv_internal.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail {

namespace {

struct Geometry {
  std::int64_t H, W, OH, OW, kH, kW, sh, sw, dh, dw, ph, pw;
  std::int64_t reach_h, reach_w;  // how far, in phase rows/columns, the kernel extends
  std::int64_t Hq, Wq;            // phase plane size
  std::int64_t plane;             // phase plane stride in elements (a whole cache line)
  std::int64_t taps, len;         // kernel taps; flat length of an output plane at pitch Wq

  explicit Geometry(const Conv2dParams& p)
      : H(p.H),
        W(p.W),
        OH(p.out_h()),
        OW(p.out_w()),
        kH(p.kH),
        kW(p.kW),
        sh(p.stride_h),
        sw(p.stride_w),
        dh(p.dilation_h),
        dw(p.dilation_w),
        ph(p.pad_h),
        pw(p.pad_w) {
    reach_h = (kH - 1) * dh / sh;
    reach_w = (kW - 1) * dw / sw;
    Wq = OW + reach_w;
    // One spare row: the junk columns of the last output row read past the last full row.
    Hq = OH + reach_h + 1;
    plane = (Hq * Wq + 15) / 16 * 16;
    taps = kH * kW;
    len = OH * Wq;
  }
  std::int64_t phases() const { return sh * sw; }
  std::int64_t tap_phase(std::int64_t kh, std::int64_t kw) const {
    return (kh * dh % sh) * sw + kw * dw % sw;
  }
  std::int64_t tap_offset(std::int64_t kh, std::int64_t kw) const {
    return kh * dh / sh * Wq + kw * dw / sw;
  }
  bool row_phase_used(std::int64_t r) const {
    for (std::int64_t kh = 0; kh < kH; ++kh)
      if (kh * dh % sh == r) return true;
    return false;
  }
  bool col_phase_used(std::int64_t q) const {
    for (std::int64_t kw = 0; kw < kW; ++kw)
      if (kw * dw % sw == q) return true;
    return false;
  }
};

// Index range [lo, hi) of j with 0 <= j*stride + shift < size, clamped to [0, count).
void span(std::int64_t size, std::int64_t count, std::int64_t stride, std::int64_t shift,
          std::int64_t& lo, std::int64_t& hi) {
  lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  const std::int64_t last = size - 1 - shift;
  hi = last < 0 ? 0 : std::min(count, last / stride + 1);
  lo = std::min(lo, hi);
}

// The used phase planes of one input plane, widened to the compute type, zeros for padding.
template <class T, class A>
void build_phases(const Geometry& g, const T* in, A* q) {
  for (std::int64_t r = 0; r < g.sh; ++r) {
    if (!g.row_phase_used(r)) continue;
    for (std::int64_t c = 0; c < g.sw; ++c) {
      if (!g.col_phase_used(c)) continue;
      A* plane = q + (r * g.sw + c) * g.plane;
      std::int64_t lo, hi;
      span(g.W, g.Wq, g.sw, c - g.pw, lo, hi);
      for (std::int64_t i = 0; i < g.Hq; ++i) {
        A* row = plane + i * g.Wq;
        const std::int64_t y = i * g.sh + r - g.ph;
        if (y < 0 || y >= g.H) {
          std::fill(row, row + g.Wq, A(0));
          continue;
        }
        const T* src = in + y * g.W;
        const std::int64_t shift = c - g.pw;
        std::fill(row, row + lo, A(0));
        if (g.sw == 1) {
          for (std::int64_t j = lo; j < hi; ++j) row[j] = static_cast<A>(src[j + shift]);
        } else {
          for (std::int64_t j = lo; j < hi; ++j) row[j] = static_cast<A>(src[j * g.sw + shift]);
        }
        std::fill(row + hi, row + g.Wq, A(0));
      }
    }
  }
}

// dst[i] = (accumulate ? dst[i] : init) + sum_k w[k] * src[k][i], K taps in one pass.
template <int K, class A>
void weighted_sum(A* __restrict dst, std::int64_t n, const A* const* src, const A* w,
                  bool accumulate, A init) {
  const A* s[K];
  A c[K];
  for (int k = 0; k < K; ++k) {
    s[k] = src[k];
    c[k] = w[k];
  }
  if (accumulate) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      A v = dst[i];
      for (int k = 0; k < K; ++k) v += c[k] * s[k][i];
      dst[i] = v;
    }
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
      A v = init;
      for (int k = 0; k < K; ++k) v += c[k] * s[k][i];
      dst[i] = v;
    }
  }
}

// Any number of taps, in as few passes over dst as the fixed-size kernels allow; the first
// pass adds onto dst only when `accumulate`.
template <class A>
void weighted_sum_any(A* dst, std::int64_t n, const A* const* src, const A* w, std::int64_t taps,
                      bool accumulate, A init) {
  if (taps == 0) {
    if (!accumulate) std::fill(dst, dst + n, init);
    return;
  }
  for (std::int64_t t = 0; t < taps;) {
    const std::int64_t left = taps - t;
    const bool acc = accumulate || t > 0;
    if (left >= 9) {
      weighted_sum<9>(dst, n, src + t, w + t, acc, init);
      t += 9;
    } else if (left >= 4) {
      weighted_sum<4>(dst, n, src + t, w + t, acc, init);
      t += 4;
    } else if (left >= 2) {
      weighted_sum<2>(dst, n, src + t, w + t, acc, init);
      t += 2;
    } else {
      weighted_sum<1>(dst, n, src + t, w + t, acc, init);
      t += 1;
    }
  }
}

template <class A>
A dot(const A* a, const A* b, std::int64_t n) {
  A s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Taps are handled in chunks this size, so per-tap pointers live on the stack.
constexpr std::int64_t kChunk = 36;

// Collects (source row, weight) pairs and sums them into dst in chunks, the first chunk
// overwriting (with init) and the rest adding; with no taps at all dst becomes init.
template <class A>
class TapBatch {
 public:
  TapBatch(A* dst, std::int64_t len, A init) : dst_(dst), len_(len), init_(init) {}
  void add(const A* src, A w) {
    src_[n_] = src;
    w_[n_++] = w;
    if (n_ == kChunk) flush();
  }
  void finish() {
    if (n_ > 0 || !started_) flush();
  }

 private:
  void flush() {
    weighted_sum_any(dst_, len_, src_, w_, n_, started_, init_);
    started_ = true;
    n_ = 0;
  }
  A* dst_;
  std::int64_t len_;
  A init_;
  const A* src_[kChunk];
  A w_[kChunk];
  std::int64_t n_ = 0;
  bool started_ = false;
};

struct Plan {
  Layout layout;
  std::size_t q = 0, buf = 0, acc = 0;
};

template <class T>
Plan forward_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p);
  Plan plan;
  plan.q = plan.layout.add_slot<A>(g.phases() * g.plane);
  plan.buf = plan.layout.add_slot<A>(g.len);
  return plan;
}

// grad input gathers from a grad-output copy with a zero margin in front as deep as the
// largest tap offset, so that every shifted read stays inside the buffer.
template <class T>
Plan backward_input_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p);
  Plan plan;
  plan.q = plan.layout.add_slot<A>(g.phases() * g.plane);
  plan.buf = plan.layout.add_slot<A>(g.reach_h * g.Wq + g.reach_w + g.Hq * g.Wq);
  return plan;
}

template <class T>
Plan backward_weight_plan(const Conv2dParams& p) {
  using A = compute_t<T>;
  const Geometry g(p);
  Plan plan;
  plan.q = plan.layout.add_slot<A>(g.phases() * g.plane);
  plan.buf = plan.layout.add_slot<A>(g.len);
  plan.acc = plan.layout.add_slot<double>(g.taps);
  return plan;
}

// grad_output plane at pitch Wq, the junk columns zero, starting at dst.
template <class T, class A>
void load_grad_rows(const Geometry& g, const T* gout, A* dst) {
  for (std::int64_t oh = 0; oh < g.OH; ++oh) {
    A* row = dst + oh * g.Wq;
    for (std::int64_t ow = 0; ow < g.OW; ++ow) row[ow] = static_cast<A>(gout[oh * g.OW + ow]);
    std::fill(row + g.OW, row + g.Wq, A(0));
  }
}

// Whether float computation goes to the channel-blocked path instead (AVX-512): strided
// layers. At stride 1 the rows here are long, full vectors; measured on mobilenet's dw1 and
// dw3, the blocked path's forward was no faster and its backward slower (its input gradient
// scatters, a read-modify-write per tap).
template <class T>
bool use_blocked(const Conv2dParams& p) {
  return std::is_same_v<compute_t<T>, float> && (p.stride_h > 1 || p.stride_w > 1) &&
         depthwise_blocked_available();
}

}  // namespace

template <class T>
Layout depthwise_forward_layout(const Conv2dParams& p) {
  return use_blocked<T>(p) ? depthwise_blocked_layout<T>(p) : forward_plan<T>(p).layout;
}
template <class T>
Layout depthwise_backward_input_layout(const Conv2dParams& p) {
  return use_blocked<T>(p) ? depthwise_blocked_layout<T>(p) : backward_input_plan<T>(p).layout;
}
template <class T>
Layout depthwise_backward_weight_layout(const Conv2dParams& p) {
  return use_blocked<T>(p) ? depthwise_blocked_layout<T>(p) : backward_weight_plan<T>(p).layout;
}

template <class T>
void depthwise_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                       T* output, void* wsp, std::size_t bytes) {
  if (use_blocked<T>(p))
    return depthwise_blocked_forward(p, input, weight, bias, output, wsp, bytes);
  using A = compute_t<T>;
  const Geometry g(p);
  const Plan plan = forward_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_plane_units(p), "conv2d_forward");
  for_slots(p.N * p.C, ws.slots(), [&](std::int64_t s, std::int64_t u0, std::int64_t u1) {
    A* q = ws.slot<A>(s, plan.q);
    A* acc = ws.slot<A>(s, plan.buf);
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t c = u % p.C;
      build_phases(g, input + u * p.H * p.W, q);
      TapBatch<A> sum(acc, g.len, bias ? static_cast<A>(bias[c]) : A(0));
      for (std::int64_t kh = 0; kh < g.kH; ++kh)
        for (std::int64_t kw = 0; kw < g.kW; ++kw)
          sum.add(q + g.tap_phase(kh, kw) * g.plane + g.tap_offset(kh, kw),
                  static_cast<A>(weight[(c * g.kH + kh) * g.kW + kw]));
      sum.finish();
      T* out = output + u * g.OH * g.OW;
      for (std::int64_t oh = 0; oh < g.OH; ++oh)
        for (std::int64_t ow = 0; ow < g.OW; ++ow)
          out[oh * g.OW + ow] = static_cast<T>(acc[oh * g.Wq + ow]);
    }
  });
}

// Each phase plane of grad input gathers the taps that read it: grad_input at phase offset i
// is the sum over those taps of w * grad_output at i - offset (zero outside the plane).
template <class T>
void depthwise_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                              T* grad_input, void* wsp, std::size_t bytes) {
  if (use_blocked<T>(p))
    return depthwise_blocked_backward_input(p, grad_output, weight, grad_input, wsp, bytes);
  using A = compute_t<T>;
  const Geometry g(p);
  const Plan plan = backward_input_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_plane_units(p), "conv2d_backward_input");
  const std::int64_t margin = g.reach_h * g.Wq + g.reach_w, qsize = g.Hq * g.Wq;
  for_slots(p.N * p.C, ws.slots(), [&](std::int64_t s, std::int64_t u0, std::int64_t u1) {
    A* gq = ws.slot<A>(s, plan.q);
    A* gb = ws.slot<A>(s, plan.buf);
    std::fill(gb, gb + margin, A(0));
    std::fill(gb + margin + g.len, gb + margin + qsize, A(0));
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t c = u % p.C;
      load_grad_rows(g, grad_output + u * g.OH * g.OW, gb + margin);
      for (std::int64_t ph = 0; ph < g.phases(); ++ph) {
        TapBatch<A> sum(gq + ph * g.plane, qsize, A(0));
        for (std::int64_t kh = 0; kh < g.kH; ++kh)
          for (std::int64_t kw = 0; kw < g.kW; ++kw)
            if (g.tap_phase(kh, kw) == ph)
              sum.add(gb + margin - g.tap_offset(kh, kw),
                      static_cast<A>(weight[(c * g.kH + kh) * g.kW + kw]));
        sum.finish();
      }
      // Interleave the phase planes back into the input plane, dropping the padding.
      T* gin = grad_input + u * g.H * g.W;
      for (std::int64_t y = 0; y < g.H; ++y) {
        T* row = gin + y * g.W;
        const std::int64_t i = (y + g.ph) / g.sh, r = (y + g.ph) % g.sh;
        if (i >= g.Hq) {
          std::fill(row, row + g.W, T(0));
          continue;
        }
        for (std::int64_t q = 0; q < g.sw; ++q) {
          // Columns x with (x + pad) % sw == q sit in phase plane q at j = (x + pad) / sw.
          const A* prow = gq + (r * g.sw + q) * g.plane + i * g.Wq;
          std::int64_t x = ((q - g.pw) % g.sw + g.sw) % g.sw;
          std::int64_t j = (x + g.pw - q) / g.sw;
          if (g.sw == 1) {
            const std::int64_t x_end = std::min(g.W, g.Wq - g.pw);
            for (; x < x_end; ++x) row[x] = static_cast<T>(prow[x + g.pw]);
          } else {
            for (; x < g.W && j < g.Wq; x += g.sw, ++j) row[x] = static_cast<T>(prow[j]);
          }
          for (; x < g.W; x += g.sw) row[x] = T(0);
        }
      }
    }
  });
}

// Parallel over channels: each channel's weights sum over the whole batch on one thread, so
// no per-thread copies or reduction are needed.
template <class T>
void depthwise_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                               T* grad_weight, T* grad_bias, void* wsp, std::size_t bytes) {
  if (use_blocked<T>(p))
    return depthwise_blocked_backward_weight(p, grad_output, input, grad_weight, grad_bias, wsp,
                                             bytes);
  using A = compute_t<T>;
  const Geometry g(p);
  const Plan plan = backward_weight_plan<T>(p);
  const Workspace ws(plan.layout, wsp, bytes, depthwise_weight_units(p), "conv2d_backward_weight");
  for_slots(p.C, ws.slots(), [&](std::int64_t s, std::int64_t c0, std::int64_t c1) {
    A* q = ws.slot<A>(s, plan.q);
    A* gb = ws.slot<A>(s, plan.buf);
    double* acc = ws.slot<double>(s, plan.acc);
    for (std::int64_t c = c0; c < c1; ++c) {
      std::fill(acc, acc + g.taps, 0.0);
      double bias_sum = 0;
      for (std::int64_t n = 0; n < p.N; ++n) {
        const std::int64_t u = n * p.C + c;
        build_phases(g, input + u * p.H * p.W, q);
        load_grad_rows(g, grad_output + u * g.OH * g.OW, gb);
        for (std::int64_t kh = 0; kh < g.kH; ++kh)
          for (std::int64_t kw = 0; kw < g.kW; ++kw)
            acc[kh * g.kW + kw] +=
                dot(gb, q + g.tap_phase(kh, kw) * g.plane + g.tap_offset(kh, kw), g.len);
        if (grad_bias) bias_sum += run_sum(gb, g.len);
      }
      for (std::int64_t t = 0; t < g.taps; ++t)
        grad_weight[c * g.taps + t] = static_cast<T>(static_cast<A>(acc[t]));
      if (grad_bias) grad_bias[c] = static_cast<T>(static_cast<A>(bias_sum));
    }
  });
}

#define FRUGAL_INSTANTIATE_DEPTHWISE(T) FRUGAL_INSTANTIATE_CONV_PATH(depthwise, T)
FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_DEPTHWISE)
#undef FRUGAL_INSTANTIATE_DEPTHWISE

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA::conv_detail
