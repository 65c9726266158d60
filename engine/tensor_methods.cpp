// Tensor's math methods and operators: each forwards to the free function of its op.
#include "engine/ops/elementwise.h"
#include "engine/ops/matmul.h"
#include "engine/ops/reduce.h"
#include "engine/tensor.h"

namespace frugal {

Tensor Tensor::add(const Tensor& o, Scalar alpha) const { return frugal::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, Scalar alpha) const { return frugal::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return frugal::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return frugal::div(*this, o); }
Tensor Tensor::pow(Scalar e) const { return frugal::pow(*this, e); }
Tensor Tensor::neg() const { return frugal::neg(*this); }
Tensor Tensor::exp() const { return frugal::exp(*this); }
Tensor Tensor::log() const { return frugal::log(*this); }
Tensor Tensor::sqrt() const { return frugal::sqrt(*this); }
Tensor Tensor::abs() const { return frugal::abs(*this); }
Tensor Tensor::relu() const { return frugal::relu(*this); }
Tensor Tensor::sigmoid() const { return frugal::sigmoid(*this); }
Tensor Tensor::tanh() const { return frugal::tanh(*this); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  return frugal::clamp(*this, lo, hi);
}
Tensor Tensor::eq(const Tensor& o) const { return frugal::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return frugal::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return frugal::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return frugal::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return frugal::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return frugal::ge(*this, o); }

Tensor Tensor::sum() const { return frugal::sum(*this); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim) const {
  return frugal::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return frugal::mean(*this); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim) const {
  return frugal::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const { return frugal::max(*this); }
Tensor Tensor::min() const { return frugal::min(*this); }
Tensor Tensor::argmax(std::int64_t dim, bool keepdim) const {
  return frugal::argmax(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return frugal::var(*this, dims, unbiased, keepdim);
}
Tensor Tensor::softmax(std::int64_t dim) const { return frugal::softmax(*this, dim); }
Tensor Tensor::log_softmax(std::int64_t dim) const { return frugal::log_softmax(*this, dim); }

Tensor Tensor::matmul(const Tensor& o) const { return frugal::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return frugal::mm(*this, o); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return add(b, a); }
Tensor operator-(Scalar a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a); }
Tensor operator/(Scalar a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, Scalar b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, Scalar b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, Scalar b) { return a.div_(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, b); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, b); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, b); }

}  // namespace frugal
