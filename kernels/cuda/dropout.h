// The CUDA dropout arithmetic: out = x * mask * scale over contiguous device data, as
// kernels/cpu/dropout.h.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cuda {

// T: float, double, Half, BFloat16 (scaled in float). out may alias x.
template <class T>
void masked_scale(const T* x, const std::uint8_t* mask, double scale, T* out, std::int64_t n);

}  // namespace frugal::kernels::cuda
