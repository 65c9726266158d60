// The CUDA nll_loss and fused cross-entropy. Targets are checked by a small kernel first (a
// bad one throws before anything is written); reductions over rows are deterministic: per-row
// values, then a single block's tree sum in double, never float atomics.
#include "kernels/cuda/loss.h"

#include <limits>
#include <string>

#include "common/error.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/scratch.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

// Threads of the single block that sums the rows.
constexpr int kReduceThreads = 1024;
// Rows up to this many classes take a warp each in the cross-entropy forward, longer a block.
constexpr std::int64_t kWarpRowMax = 1024;

template <class T>
__device__ __forceinline__ void store_double(T* p, double v) {
  store(p, static_cast<compute_t<T>>(v));
}

__global__ void find_bad_target_kernel(const std::int64_t* target, std::int64_t n, std::int64_t c,
                                       std::int64_t ignore_index, long long* first_bad) {
  FRUGAL_CUDA_KERNEL_LOOP(i, n) {
    const std::int64_t t = target[i];
    if (t != ignore_index && (t < 0 || t >= c)) atomicMin(first_bad, static_cast<long long>(i));
  }
}

// The CPU's check_problem on device targets: throws the same message.
void check_problem(const std::int64_t* target, std::int64_t n, std::int64_t c,
                   std::int64_t ignore_index, const char* op) {
  FRUGAL_CHECK(n >= 0 && c >= 0, std::string(op) + ": bad input shape [" + std::to_string(n) +
                                     ", " + std::to_string(c) + "]");
  if (n == 0) return;
  Scratch first_bad(sizeof(long long));
  long long* bad = first_bad.get<long long>();
  // 0x7f bytes: a huge positive value, above any position.
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(bad, 0x7f, sizeof(long long), stream()));
  find_bad_target_kernel<<<blocks_for(n), kBlockSize, 0, stream()>>>(target, n, c, ignore_index,
                                                                     bad);
  FRUGAL_CUDA_CHECK_LAUNCH();
  // Reading the result back synchronises the stream: the error must be thrown before any
  // output is written (PyTorch uses a device-side assert instead, which kills the context).
  long long position = 0;
  FRUGAL_CUDA_CHECK(
      cudaMemcpyAsync(&position, bad, sizeof(position), cudaMemcpyDeviceToHost, stream()));
  FRUGAL_CUDA_CHECK(cudaStreamSynchronize(stream()));
  if (position >= n) return;
  std::int64_t t = 0;
  FRUGAL_CUDA_CHECK(
      cudaMemcpyAsync(&t, target + position, sizeof(t), cudaMemcpyDeviceToHost, stream()));
  FRUGAL_CUDA_CHECK(cudaStreamSynchronize(stream()));
  throw Error(std::string(op) + ": target " + std::to_string(t) + " at position " +
              std::to_string(position) + " is out of bounds for " + std::to_string(c) +
              " classes (valid: 0 to " + std::to_string(c - 1) + ", or ignore_index " +
              std::to_string(ignore_index) + ")");
}

template <class T>
__device__ __forceinline__ double class_weight(const T* weight, std::int64_t t) {
  return weight ? static_cast<double>(load(weight + t)) : 1.0;
}

// The factor a row's gradient is scaled by: grad_out, divided by total_weight for Mean.
template <class T>
__device__ __forceinline__ double grad_scale(const T* grad_out, Reduction reduction,
                                             const T* total_weight, std::int64_t i) {
  if (reduction == Reduction::None) return static_cast<double>(load(grad_out + i));
  const double g = static_cast<double>(load(grad_out));
  return reduction == Reduction::Mean ? g / static_cast<double>(load(total_weight)) : g;
}

// One block: sums the per-row losses and weights (row_loss null: nll's rows, computed here
// from input) in a fixed order and writes total_weight and, unless None, out. With None, nll's
// rows are written to out here too.
template <class T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_rows_kernel(const double* row_loss, const double* row_weight, const T* input,
                       const std::int64_t* target, const T* weight, std::int64_t n, std::int64_t c,
                       Reduction reduction, std::int64_t ignore_index, T* out, T* total_weight) {
  using C = compute_t<T>;
  double loss = 0, wsum = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double l = 0, w = 0;
    if (row_loss) {
      l = row_loss[i];
      w = row_weight[i];
    } else {
      const std::int64_t t = target[i];
      if (t != ignore_index) {
        w = class_weight(weight, t);
        l = -w * static_cast<double>(load(input + i * c + t));
      }
      if (reduction == Reduction::None) store(out + i, static_cast<C>(l));
    }
    loss += l;
    wsum += w;
  }
  loss = block_sum(loss);
  wsum = block_sum(wsum);
  if (threadIdx.x == 0) {
    store_double(total_weight, wsum);
    if (reduction == Reduction::Sum) store_double(out, loss);
    if (reduction == Reduction::Mean) store_double(out, loss / wsum);
  }
}

// One row per group of kGroup threads (a warp, or the whole block, whose row loop bound is
// then uniform so every thread reaches the barriers): the row's log-sum-exp, its log_probs and
// row_lse when asked, its loss and weight to row_loss / row_weight, and to out for None.
template <int kGroup, class T>
__global__ void __launch_bounds__(kBlockSize)
    cross_entropy_rows_kernel(const T* logits, const std::int64_t* target, const T* weight,
                              std::int64_t n, std::int64_t c, Reduction reduction,
                              std::int64_t ignore_index, T* out, T* log_probs, T* row_lse,
                              double* row_loss, double* row_weight) {
  using C = compute_t<T>;
  const std::int64_t per_block = blockDim.x / kGroup;
  const int lane = static_cast<int>(threadIdx.x % kGroup);
  for (std::int64_t i = blockIdx.x * per_block + threadIdx.x / kGroup; i < n;
       i += gridDim.x * per_block) {
    const T* x = logits + i * c;
    C m = -std::numeric_limits<C>::infinity();
    for (std::int64_t j = lane; j < c; j += kGroup) {
      const C v = load(x + j);
      m = v > m ? v : m;
    }
    m = group_max<kGroup>(m);
    double s = 0;
    for (std::int64_t j = lane; j < c; j += kGroup)
      s += static_cast<double>(exp_c(load(x + j) - m));
    const double log_sum = log(group_sum<kGroup>(s));
    if (log_probs) {
      const C ls = static_cast<C>(log_sum);
      T* lp = log_probs + i * c;
      for (std::int64_t j = lane; j < c; j += kGroup) store(lp + j, (load(x + j) - m) - ls);
    }
    if (lane == 0) {
      if (row_lse) store_double(row_lse + i, static_cast<double>(m) + log_sum);
      const std::int64_t t = target[i];
      double l = 0, w = 0;
      if (t != ignore_index) {
        w = class_weight(weight, t);
        l = -w * ((static_cast<double>(load(x + t)) - static_cast<double>(m)) - log_sum);
      }
      if (reduction == Reduction::None) store(out + i, static_cast<C>(l));
      row_loss[i] = l;
      row_weight[i] = w;
    }
  }
}

template <class T>
__global__ void nll_backward_kernel(const T* grad_out, const std::int64_t* target, const T* weight,
                                    std::int64_t n, std::int64_t c, Reduction reduction,
                                    std::int64_t ignore_index, const T* total_weight,
                                    T* grad_input) {
  FRUGAL_CUDA_KERNEL_LOOP(e, n * c) {
    const std::int64_t i = e / c, t = target[i];
    double g = 0;
    if (t != ignore_index && e - i * c == t)
      g = -class_weight(weight, t) * grad_scale(grad_out, reduction, total_weight, i);
    store_double(grad_input + e, g);
  }
}

// Each element is read and written by the same thread, so grad_logits may alias saved.
template <class T>
__global__ void cross_entropy_backward_kernel(const T* grad_out, const T* saved, const T* row_lse,
                                              const std::int64_t* target, const T* weight,
                                              std::int64_t n, std::int64_t c, Reduction reduction,
                                              std::int64_t ignore_index, const T* total_weight,
                                              T* grad_logits) {
  using C = compute_t<T>;
  FRUGAL_CUDA_KERNEL_LOOP(e, n * c) {
    const std::int64_t i = e / c, t = target[i];
    if (t == ignore_index) {
      store(grad_logits + e, C(0));
      continue;
    }
    const C scale =
        static_cast<C>(class_weight(weight, t) * grad_scale(grad_out, reduction, total_weight, i));
    const C shift = row_lse ? load(row_lse + i) : C(0);
    store(grad_logits + e, scale * exp_c(load(saved + e) - shift));
    // As on the CPU: the target's element is rounded to T before the one-hot is taken off.
    if (e - i * c == t) store(grad_logits + e, load(grad_logits + e) - scale);
  }
}

}  // namespace

template <class T>
void nll_loss_forward(const T* input, const std::int64_t* target, const T* weight, std::int64_t n,
                      std::int64_t c, Reduction reduction, std::int64_t ignore_index, T* out,
                      T* total_weight) {
  check_problem(target, n, c, ignore_index, "nll_loss");
  // One block even for n == 0: total_weight and the reduced out are written regardless.
  reduce_rows_kernel<T><<<1, kReduceThreads, 0, stream()>>>(
      nullptr, nullptr, input, target, weight, n, c, reduction, ignore_index, out, total_weight);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void nll_loss_backward(const T* grad_out, const std::int64_t* target, const T* weight,
                       std::int64_t n, std::int64_t c, Reduction reduction,
                       std::int64_t ignore_index, const T* total_weight, T* grad_input) {
  check_problem(target, n, c, ignore_index, "nll_loss_backward");
  if (n * c == 0) return;
  nll_backward_kernel<T><<<blocks_for(n * c), kBlockSize, 0, stream()>>>(
      grad_out, target, weight, n, c, reduction, ignore_index, total_weight, grad_input);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void cross_entropy_forward(const T* logits, const std::int64_t* target, const T* weight,
                           std::int64_t n, std::int64_t c, Reduction reduction,
                           std::int64_t ignore_index, T* out, T* total_weight, T* log_probs,
                           T* row_lse) {
  check_problem(target, n, c, ignore_index, "cross_entropy");
  Scratch rows(2 * static_cast<std::size_t>(n) * sizeof(double) + sizeof(double));
  double* row_loss = rows.get<double>();
  double* row_weight = row_loss + n;
  if (n > 0) {
    if (c <= kWarpRowMax) {
      constexpr int kRowsPerBlock = kBlockSize / 32;
      cross_entropy_rows_kernel<32, T><<<blocks_for(n, kRowsPerBlock), kBlockSize, 0, stream()>>>(
          logits, target, weight, n, c, reduction, ignore_index, out, log_probs, row_lse, row_loss,
          row_weight);
    } else {
      cross_entropy_rows_kernel<kBlockSize, T><<<blocks_for(n, 1), kBlockSize, 0, stream()>>>(
          logits, target, weight, n, c, reduction, ignore_index, out, log_probs, row_lse, row_loss,
          row_weight);
    }
    FRUGAL_CUDA_CHECK_LAUNCH();
  }
  reduce_rows_kernel<T><<<1, kReduceThreads, 0, stream()>>>(row_loss, row_weight, logits, target,
                                                            weight, n, c, reduction, ignore_index,
                                                            out, total_weight);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

template <class T>
void cross_entropy_backward(const T* grad_out, const T* saved, const T* row_lse,
                            const std::int64_t* target, const T* weight, std::int64_t n,
                            std::int64_t c, Reduction reduction, std::int64_t ignore_index,
                            const T* total_weight, T* grad_logits) {
  check_problem(target, n, c, ignore_index, "cross_entropy_backward");
  if (n * c == 0) return;
  cross_entropy_backward_kernel<T><<<blocks_for(n * c), kBlockSize, 0, stream()>>>(
      grad_out, saved, row_lse, target, weight, n, c, reduction, ignore_index, total_weight,
      grad_logits);
  FRUGAL_CUDA_CHECK_LAUNCH();
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_LOSS)

}  // namespace frugal::kernels::cuda
