// gradcheck's loop: one backward for the analytic gradients, two forwards per input element.
#include "gradcheck.h"

#include <cmath>
#include <sstream>

namespace frugal::testing {

std::vector<Tensor> random_inputs(const std::vector<std::vector<std::int64_t>>& shapes,
                                  std::uint64_t seed) {
  Generator gen(seed + 1);
  std::vector<Tensor> out;
  for (const auto& s : shapes) out.push_back(randn(s, kFloat64, &gen).requires_grad_());
  return out;
}

namespace {

double weighted_sum(const Tensor& out, const Tensor& v) {
  const Tensor o = out.to(kFloat64).contiguous();
  const double* a = o.data_ptr<double>();
  const double* b = v.data_ptr<double>();
  double s = 0;
  for (std::int64_t i = 0; i < o.numel(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

std::string gradcheck(const OpFn& f, const std::vector<Tensor>& inputs,
                      const GradcheckOptions& options) {
  for (const Tensor& x : inputs) {
    if (x.requires_grad() && (x.dtype() != kFloat64 || !x.is_contiguous()))
      return "gradcheck needs contiguous float64 inputs";
    if (x.requires_grad()) Tensor(x).mutable_grad() = Tensor();
  }
  Tensor out = f(inputs);
  Generator gen(12345);
  const Tensor v = randn(out.sizes(), kFloat64, &gen);
  if (!out.requires_grad()) return "the output does not require grad";
  (out.to(kFloat64) * v).sum().backward();

  std::ostringstream report;
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.requires_grad()) continue;
    const Tensor analytic = x.grad().defined() ? x.grad().contiguous() : zeros_like(x);
    double* data = x.data_ptr<double>();
    double worst = 0;
    std::int64_t worst_at = -1;
    double worst_a = 0, worst_n = 0;
    for (std::int64_t j = 0; j < x.numel(); ++j) {
      const double saved = data[j];
      data[j] = saved + options.eps;
      const double plus = weighted_sum(f(inputs), v);
      data[j] = saved - options.eps;
      const double minus = weighted_sum(f(inputs), v);
      data[j] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double a = analytic.data_ptr<double>()[j];
      const double excess =
          std::abs(a - numeric) - (options.atol + options.rtol * std::abs(numeric));
      if (!(excess <= 0) && (worst_at < 0 || excess > worst || std::isnan(excess))) {
        worst = excess;
        worst_at = j;
        worst_a = a;
        worst_n = numeric;
      }
    }
    if (worst_at >= 0)
      report << "input " << i << " " << shape_string(x.sizes()) << ": element " << worst_at
             << " analytic " << worst_a << " vs numeric " << worst_n << "\n";
  }
  return report.str();
}

}  // namespace frugal::testing
