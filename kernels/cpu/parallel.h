// How CPU kernels split work across threads: one OpenMP team whose size frugal controls
// (set_num_threads, like torch::set_num_threads), and parallel_for over an index range with
// a grain size, so that small tensors run on the calling thread without a fork.
#pragma once

#include <algorithm>
#include <cstdint>

namespace frugal::kernels::cpu {

// Threads used by every parallel kernel; defaults to OMP_NUM_THREADS or the core count.
void set_num_threads(int threads);
int get_num_threads();
// True inside a parallel_for body (kernels called from there run on one thread).
bool in_parallel_region();

namespace detail {
void parallel_for_impl(std::int64_t begin, std::int64_t end, std::int64_t grain,
                       void (*body)(void*, std::int64_t, std::int64_t), void* context);
}  // namespace detail

// Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end), in parallel
// when the range holds more than `grain` items, and at most one chunk per thread.
template <class F>
void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain, const F& fn) {
  if (end <= begin) return;
  if (end - begin <= grain || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  detail::parallel_for_impl(
      begin, end, grain,
      [](void* ctx, std::int64_t b, std::int64_t e) { (*static_cast<const F*>(ctx))(b, e); },
      const_cast<F*>(&fn));
}

// Planes per task for per-plane kernels: enough work per chunk (about 32K elements) that
// small tensors are not split at all.
inline std::int64_t plane_grain(std::int64_t plane_elems) {
  return std::max<std::int64_t>(1,
                                (std::int64_t{1} << 15) / std::max<std::int64_t>(1, plane_elems));
}

}  // namespace frugal::kernels::cpu
