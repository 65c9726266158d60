// nll_loss and the fused cross-entropy. Targets are validated in a serial pass first, so a
// bad one throws before anything is written and never from inside a parallel region.
#include "kernels/cpu/loss.h"

#include <string>

#include "common/error.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/softmax_rows.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu {

namespace {

constexpr std::int64_t kGrain = 32768;

void check_problem(const std::int64_t* target, std::int64_t n, std::int64_t c,
                   std::int64_t ignore_index, const char* op) {
  FRUGAL_CHECK(n >= 0 && c >= 0, std::string(op) + ": bad input shape [" + std::to_string(n) +
                                     ", " + std::to_string(c) + "]");
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = target[i];
    FRUGAL_CHECK(t == ignore_index || (t >= 0 && t < c),
                 std::string(op) + ": target " + std::to_string(t) + " at position " +
                     std::to_string(i) + " is out of bounds for " + std::to_string(c) +
                     " classes (valid: 0 to " + std::to_string(c - 1) + ", or ignore_index " +
                     std::to_string(ignore_index) + ")");
  }
}

template <class T>
double class_weight(const T* weight, std::int64_t t) {
  return weight ? detail::to_double(weight[t]) : 1.0;
}

// Sums row(i, loss, weight) over rows in a number of pieces fixed by the size alone, so that
// the total does not depend on the thread count; writes the reduced loss and total weight.
template <class T, class Row>
void reduce_rows(std::int64_t n, std::int64_t c, Reduction reduction, T* out, T* total_weight,
                 const Row& row) {
  constexpr int kMaxPieces = 64;
  const int pieces = static_cast<int>(
      std::clamp<std::int64_t>(n * std::max<std::int64_t>(c, 1) / kGrain, 1, kMaxPieces));
  double loss[kMaxPieces] = {}, weight[kMaxPieces] = {};
  parallel_for(0, pieces, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k)
      for (std::int64_t i = n * k / pieces; i < n * (k + 1) / pieces; ++i) {
        double l = 0, w = 0;
        row(i, l, w);
        if (reduction == Reduction::None) out[i] = static_cast<T>(static_cast<compute_t<T>>(l));
        loss[k] += l;
        weight[k] += w;
      }
  });
  double loss_sum = 0, weight_sum = 0;
  for (int k = 0; k < pieces; ++k) {
    loss_sum += loss[k];
    weight_sum += weight[k];
  }
  *total_weight = static_cast<T>(weight_sum);
  if (reduction == Reduction::Sum) *out = static_cast<T>(loss_sum);
  if (reduction == Reduction::Mean) *out = static_cast<T>(loss_sum / weight_sum);
}

// The factor a row's gradient is scaled by: grad_out, divided by total_weight for Mean.
template <class T>
double grad_scale(const T* grad_out, Reduction reduction, const T* total_weight, std::int64_t i) {
  if (reduction == Reduction::None) return detail::to_double(grad_out[i]);
  const double g = detail::to_double(grad_out[0]);
  return reduction == Reduction::Mean ? g / detail::to_double(total_weight[0]) : g;
}

}  // namespace

template <class T>
void nll_loss_forward(const T* input, const std::int64_t* target, const T* weight, std::int64_t n,
                      std::int64_t c, Reduction reduction, std::int64_t ignore_index, T* out,
                      T* total_weight) {
  check_problem(target, n, c, ignore_index, "nll_loss");
  reduce_rows(n, 1, reduction, out, total_weight, [&](std::int64_t i, double& l, double& w) {
    const std::int64_t t = target[i];
    if (t == ignore_index) return;
    w = class_weight(weight, t);
    l = -w * detail::to_double(input[i * c + t]);
  });
}

template <class T>
void nll_loss_backward(const T* grad_out, const std::int64_t* target, const T* weight,
                       std::int64_t n, std::int64_t c, Reduction reduction,
                       std::int64_t ignore_index, const T* total_weight, T* grad_input) {
  check_problem(target, n, c, ignore_index, "nll_loss_backward");
  parallel_for(0, n, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(c, 1)),
               [&](std::int64_t b, std::int64_t e) {
                 for (std::int64_t i = b; i < e; ++i) {
                   T* row = grad_input + i * c;
                   for (std::int64_t j = 0; j < c; ++j) row[j] = T(0.0f);
                   const std::int64_t t = target[i];
                   if (t == ignore_index) continue;
                   row[t] = static_cast<T>(-class_weight(weight, t) *
                                           grad_scale(grad_out, reduction, total_weight, i));
                 }
               });
}

template <class T>
void cross_entropy_forward(const T* logits, const std::int64_t* target, const T* weight,
                           std::int64_t n, std::int64_t c, Reduction reduction,
                           std::int64_t ignore_index, T* out, T* total_weight, T* log_probs,
                           T* row_lse) {
  using C = compute_t<T>;
  check_problem(target, n, c, ignore_index, "cross_entropy");
  reduce_rows(n, c, reduction, out, total_weight, [&](std::int64_t i, double& l, double& w) {
    const T* x = logits + i * c;
    const C m = detail::row_max(x, c);
    const double log_sum = std::log(detail::exp_sum(x, c, m, static_cast<T*>(nullptr)));
    if (log_probs) {
      const C ls = static_cast<C>(log_sum);
      T* lp = log_probs + i * c;
      for (std::int64_t j = 0; j < c; ++j) lp[j] = static_cast<T>((static_cast<C>(x[j]) - m) - ls);
    }
    if (row_lse) row_lse[i] = static_cast<T>(static_cast<double>(m) + log_sum);
    const std::int64_t t = target[i];
    if (t == ignore_index) return;
    w = class_weight(weight, t);
    l = -w * ((detail::to_double(x[t]) - static_cast<double>(m)) - log_sum);
  });
}

template <class T>
void cross_entropy_backward(const T* grad_out, const T* saved, const T* row_lse,
                            const std::int64_t* target, const T* weight, std::int64_t n,
                            std::int64_t c, Reduction reduction, std::int64_t ignore_index,
                            const T* total_weight, T* grad_logits) {
  using C = compute_t<T>;
  check_problem(target, n, c, ignore_index, "cross_entropy_backward");
  parallel_for(0, n, std::max<std::int64_t>(1, kGrain / std::max<std::int64_t>(c, 1)),
               [&](std::int64_t b, std::int64_t e) {
                 C p[detail::kExpChunk];
                 for (std::int64_t i = b; i < e; ++i) {
                   T* g = grad_logits + i * c;
                   const std::int64_t t = target[i];
                   if (t == ignore_index) {
                     for (std::int64_t j = 0; j < c; ++j) g[j] = T(0.0f);
                     continue;
                   }
                   const double scale_d =
                       class_weight(weight, t) * grad_scale(grad_out, reduction, total_weight, i);
                   const C scale = static_cast<C>(scale_d);
                   const C shift = row_lse ? static_cast<C>(row_lse[i]) : C(0);
                   const T* s = saved + i * c;
                   for (std::int64_t j = 0; j < c; j += detail::kExpChunk) {
                     const int m =
                         static_cast<int>(std::min<std::int64_t>(detail::kExpChunk, c - j));
                     detail::exp_chunk<T, false>(s + j, &shift, m, p);
                     for (int k = 0; k < m; ++k) g[j + k] = static_cast<T>(scale * p[k]);
                   }
                   g[t] = static_cast<T>(static_cast<C>(g[t]) - scale);
                 }
               });
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_LOSS)

}  // namespace frugal::kernels::cpu
