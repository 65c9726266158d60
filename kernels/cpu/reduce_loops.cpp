// Building a reduction's plan: validate the view, drop size-1 dims, order the reduced dims by
// stride and coalesce neighbours, so that the loops in reduce_loops.h see as few dims as can be.
#include "kernels/cpu/reduce_loops.h"

#include <string>
#include <utility>

#include "common/error.h"

namespace frugal::kernels::cpu {

StridedDims contiguous_dims(int ndim, const std::int64_t* sizes) {
  FRUGAL_CHECK(ndim >= 0 && ndim <= kMaxReduceDims,
               "contiguous_dims: " + std::to_string(ndim) + " dims, at most " +
                   std::to_string(kMaxReduceDims) + " are supported");
  StridedDims d;
  d.ndim = ndim;
  std::int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    d.sizes[i] = sizes[i];
    d.strides[i] = stride;
    stride *= sizes[i];
  }
  return d;
}

namespace detail {

namespace {

std::string describe(const StridedDims& in) {
  std::string s = "sizes [";
  for (int d = 0; d < in.ndim; ++d) s += (d ? ", " : "") + std::to_string(in.sizes[d]);
  s += "], strides [";
  for (int d = 0; d < in.ndim; ++d) s += (d ? ", " : "") + std::to_string(in.strides[d]);
  return s + "]";
}

void check_dims(const StridedDims& in, const char* op) {
  FRUGAL_CHECK(in.ndim >= 0 && in.ndim <= kMaxReduceDims,
               std::string(op) + ": input has " + std::to_string(in.ndim) + " dims, at most " +
                   std::to_string(kMaxReduceDims) + " are supported");
  for (int d = 0; d < in.ndim; ++d)
    FRUGAL_CHECK(in.sizes[d] >= 0 && in.strides[d] >= 0,
                 std::string(op) + ": negative size or stride in dim " + std::to_string(d) + " (" +
                     describe(in) + ")");
}

// Merges dim i into dim i-1 wherever i-1 steps exactly over all of dim i.
int coalesce(int n, std::int64_t* sizes, std::int64_t* strides, std::int64_t* out_strides) {
  if (n == 0) return 0;
  int m = 0;
  for (int i = 1; i < n; ++i) {
    if (strides[m] == strides[i] * sizes[i]) {
      sizes[m] *= sizes[i];
      strides[m] = strides[i];
      if (out_strides) out_strides[m] = out_strides[i];
    } else {
      ++m;
      sizes[m] = sizes[i];
      strides[m] = strides[i];
      if (out_strides) out_strides[m] = out_strides[i];
    }
  }
  return m + 1;
}

}  // namespace

ReducePlan plan_reduction(const StridedDims& in, std::uint32_t reduce_mask, const char* op) {
  check_dims(in, op);
  FRUGAL_CHECK((reduce_mask >> in.ndim) == 0, std::string(op) +
                                                  ": reduce mask names a dim past the input's " +
                                                  std::to_string(in.ndim) + " dims");
  ReducePlan p;
  for (int d = 0; d < in.ndim; ++d) {
    if (reduce_mask & dim_bit(d)) {
      p.red_numel *= in.sizes[d];
      if (in.sizes[d] == 1) continue;
      p.red_sizes[p.nred] = in.sizes[d];
      p.red_strides[p.nred] = in.strides[d];
      ++p.nred;
    } else {
      p.out_numel *= in.sizes[d];
      if (in.sizes[d] == 1) continue;
      p.keep_sizes[p.nkeep] = in.sizes[d];
      p.keep_strides[p.nkeep] = in.strides[d];
      ++p.nkeep;
    }
  }
  std::int64_t out_stride = 1;
  for (int d = p.nkeep - 1; d >= 0; --d) {
    p.keep_out_strides[d] = out_stride;
    out_stride *= p.keep_sizes[d];
  }
  p.nkeep = coalesce(p.nkeep, p.keep_sizes, p.keep_strides, p.keep_out_strides);

  // Largest stride outermost (stable, so equal strides keep their order), then coalesce.
  for (int i = 1; i < p.nred; ++i)
    for (int j = i; j > 0 && p.red_strides[j - 1] < p.red_strides[j]; --j) {
      std::swap(p.red_strides[j - 1], p.red_strides[j]);
      std::swap(p.red_sizes[j - 1], p.red_sizes[j]);
    }
  p.nred = coalesce(p.nred, p.red_sizes, p.red_strides, nullptr);
  if (p.nred == 0) {
    p.red_sizes[0] = 1;
    p.red_strides[0] = 0;
    p.nred = 1;
  }
  return p;
}

std::uint32_t single_dim_mask(const StridedDims& in, int dim, const char* op) {
  check_dims(in, op);
  FRUGAL_CHECK(dim >= 0 && dim < std::max(in.ndim, 1) && (in.ndim > 0 || dim == 0),
               std::string(op) + ": dim " + std::to_string(dim) + " is out of range for " +
                   std::to_string(in.ndim) + " dims");
  return in.ndim == 0 ? 0u : dim_bit(dim);
}

void check_nonempty(const ReducePlan& plan, const char* op) {
  FRUGAL_CHECK(plan.out_numel == 0 || plan.red_numel > 0,
               std::string(op) + ": cannot reduce over zero elements (no identity)");
}

int column_lane_dim(const ReducePlan& p) {
  int best = -1;
  for (int d = 0; d < p.nkeep; ++d)
    if (p.keep_strides[d] > 0 && (best < 0 || p.keep_strides[d] < p.keep_strides[best])) best = d;
  if (best < 0) return -1;
  const std::int64_t inner = p.red_strides[p.nred - 1];
  // A reduced run of stride 0 (a broadcast) or longer stride loses to contiguous lanes.
  if (p.keep_strides[best] < inner || (inner == 0 && p.red_sizes[p.nred - 1] > 1) ||
      p.red_sizes[p.nred - 1] == 1)
    return best;
  return -1;
}

}  // namespace detail

}  // namespace frugal::kernels::cpu
