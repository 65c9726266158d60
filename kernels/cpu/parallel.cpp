// The OpenMP team behind parallel_for, and the thread-count setting shared by all kernels
// (Eigen's GEMM reads the same OpenMP setting).
#include "kernels/cpu/parallel.h"

#include <omp.h>

#include <algorithm>

#include "common/error.h"

namespace frugal::kernels::cpu {

void set_num_threads(int threads) {
  FRUGAL_CHECK(threads >= 1,
               "set_num_threads: need at least one thread, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

int get_num_threads() { return omp_get_max_threads(); }

bool in_parallel_region() { return omp_in_parallel() != 0; }

namespace detail {

void parallel_for_impl(std::int64_t begin, std::int64_t end, std::int64_t grain,
                       void (*body)(void*, std::int64_t, std::int64_t), void* context) {
  const std::int64_t n = end - begin;
  const std::int64_t max_chunks = std::max<std::int64_t>(1, n / std::max<std::int64_t>(grain, 1));
  const int threads = static_cast<int>(std::min<std::int64_t>(get_num_threads(), max_chunks));
  if (threads <= 1) {
    body(context, begin, end);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads;
    const std::int64_t b = begin + t * chunk;
    const std::int64_t e = std::min(end, b + chunk);
    if (b < e) body(context, b, e);
  }
}

}  // namespace detail

}  // namespace frugal::kernels::cpu
