// Dropout's masked scaling, parallel over contiguous chunks.
#include "kernels/cpu/dropout.h"

#include "kernels/cpu/loops.h"
#include "kernels/cpu/parallel.h"

namespace frugal::kernels::cpu {

template <class T>
void masked_scale(const T* x, const std::uint8_t* mask, double scale, T* out, std::int64_t n) {
  using C = compute_t<T>;
  const C s = static_cast<C>(scale);
  parallel_for(0, n, kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      out[i] = static_cast<T>(static_cast<C>(x[i]) * (mask[i] ? s : C(0)));
  });
}

template void masked_scale<float>(const float*, const std::uint8_t*, double, float*, std::int64_t);
template void masked_scale<double>(const double*, const std::uint8_t*, double, double*,
                                   std::int64_t);
template void masked_scale<Half>(const Half*, const std::uint8_t*, double, Half*, std::int64_t);
template void masked_scale<BFloat16>(const BFloat16*, const std::uint8_t*, double, BFloat16*,
                                     std::int64_t);

}  // namespace frugal::kernels::cpu
