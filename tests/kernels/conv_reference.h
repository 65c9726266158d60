// The definition of conv2d as one naive loop nest in double, forward and both backwards, that
// the kernel tests (every path, every instruction-set level) check the fast kernels against.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/conv.h"

namespace frugal::kernels::cpu::testing {

// A value and the sum of the magnitudes of its terms (what rounding error scales with).
struct Ref {
  std::vector<double> value, mag;
  explicit Ref(std::int64_t n) : value(static_cast<std::size_t>(n)), mag(value.size()) {}
  void add(std::int64_t i, double t) {
    value[static_cast<std::size_t>(i)] += t;
    mag[static_cast<std::size_t>(i)] += std::abs(t);
  }
};

struct Refs {
  Ref out, gin, gw, gb;
};

// All three directions in one loop nest over every (output, tap) pair: cross-correlation with
// strides, padding, dilation and groups. An empty bias adds none; an empty gout leaves the
// gradients zero (a forward-only check).
inline Refs naive_conv2d(const Conv2dParams& p, const std::vector<double>& x,
                         const std::vector<double>& w, const std::vector<double>& b,
                         const std::vector<double>& gout) {
  const std::int64_t OH = p.out_h(), OW = p.out_w(), Cg = p.C / p.groups, Og = p.O / p.groups;
  Refs r{Ref(p.N * p.O * OH * OW), Ref(p.N * p.C * p.H * p.W), Ref(p.O * Cg * p.kH * p.kW),
         Ref(p.O)};
  const bool grads = !gout.empty();
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t o = 0; o < p.O; ++o)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t oi = ((n * p.O + o) * OH + oh) * OW + ow;
          const double gv = grads ? gout[static_cast<std::size_t>(oi)] : 0.0;
          if (!b.empty()) r.out.add(oi, b[static_cast<std::size_t>(o)]);
          if (grads) r.gb.add(o, gv);
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t kh = 0; kh < p.kH; ++kh)
              for (std::int64_t kw = 0; kw < p.kW; ++kw) {
                const std::int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
                const std::int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                const std::int64_t ci = o / Og * Cg + c;
                const std::int64_t xi = ((n * p.C + ci) * p.H + ih) * p.W + iw;
                const std::int64_t wi = ((o * Cg + c) * p.kH + kh) * p.kW + kw;
                const double xv = x[static_cast<std::size_t>(xi)];
                const double wv = w[static_cast<std::size_t>(wi)];
                r.out.add(oi, xv * wv);
                if (!grads) continue;
                r.gin.add(xi, gv * wv);
                r.gw.add(wi, gv * xv);
              }
        }
  return r;
}

}  // namespace frugal::kernels::cpu::testing
