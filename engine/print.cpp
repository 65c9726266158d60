// operator<< for tensors, in PyTorch's C++ layout: the values (4 decimals for floating
// types, nested rows for higher dims, "..." past 1000 elements), then "[ CPUFloatType{2,3} ]".
#include <iomanip>
#include <ostream>
#include <sstream>

#include "engine/autograd/node.h"
#include "engine/dispatch.h"
#include "engine/tensor.h"

namespace frugal {

namespace {

constexpr std::int64_t kSummariseAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

double value_at(const Tensor& t, std::int64_t offset) {
  return dispatch_all(t.dtype(), "print", [&]<class T>() {
    const T* base = static_cast<const T*>(t.data_ptr());
    return static_cast<double>(static_cast<compute_t<T>>(base[offset]));
  });
}

void print_row(std::ostream& out, const Tensor& t, std::int64_t offset, bool summarise) {
  const std::int64_t n = t.sizes().back(), stride = t.strides().back();
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << " ...";
      i = n - kEdgeItems - 1;
      continue;
    }
    const double v = value_at(t, offset + i * stride);
    out << ' ' << std::setw(10);
    if (t.is_floating_point())
      out << std::fixed << std::setprecision(4) << v;
    else
      out << static_cast<long long>(v);
  }
  out << '\n';
}

// Prints the 2-d slices of dims [0, dim-2) recursively, each headed by its index, as PyTorch.
void print_block(std::ostream& out, const Tensor& t, std::int64_t dim, std::int64_t offset,
                 const std::string& prefix, bool summarise) {
  const std::int64_t ndim = t.dim();
  if (dim == ndim - 2) {
    if (!prefix.empty()) out << '(' << prefix << ",.,.) = \n";
    const std::int64_t rows = t.sizes()[static_cast<std::size_t>(dim)];
    for (std::int64_t r = 0; r < rows; ++r) {
      if (summarise && rows > 2 * kEdgeItems && r == kEdgeItems) {
        out << " ...\n";
        r = rows - kEdgeItems - 1;
        continue;
      }
      print_row(out, t, offset + r * t.strides()[static_cast<std::size_t>(dim)], summarise);
    }
    return;
  }
  const std::int64_t n = t.sizes()[static_cast<std::size_t>(dim)];
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << "...\n";
      i = n - kEdgeItems - 1;
      continue;
    }
    print_block(out, t, dim + 1, offset + i * t.strides()[static_cast<std::size_t>(dim)],
                prefix.empty() ? std::to_string(i + 1) : prefix + "," + std::to_string(i + 1),
                summarise);
    if (i + 1 < n) out << '\n';
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t_) {
  if (!t_.defined()) return out << "[ Tensor (undefined) ]";
  const Tensor t = t_.is_cpu() ? t_ : t_.detach().cpu();  // values are read on the host
  std::ostringstream s;
  const bool summarise = t.numel() > kSummariseAbove;
  if (t.dim() == 0) {
    const double v = value_at(t, 0);
    if (t.is_floating_point())
      s << std::setprecision(8) << v << '\n';
    else
      s << static_cast<long long>(v) << '\n';
  } else if (t.numel() > 0) {
    if (t.dim() == 1)
      print_row(s, t, 0, summarise);
    else
      print_block(s, t, 0, 0, "", summarise);
  }
  s << "[ " << t_.toString() << '{';
  for (std::int64_t d = 0; d < t.dim(); ++d)
    s << (d ? "," : "") << t.sizes()[static_cast<std::size_t>(d)];
  s << "} ]";
  if (t_.requires_grad() && t_.grad_fn()) s << " grad_fn=<" << t_.grad_fn()->name() << '>';
  return out << s.str();
}

}  // namespace frugal
