// Dropout's arithmetic: out = x * mask * scale over contiguous data, with the 0/1 byte mask
// that kernels/cpu/random.h's bernoulli draws. Forward and backward are the same formula.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace frugal::kernels::cpu {

// T: float, double, Half, BFloat16 (scaled in float). out may alias x.
template <class T>
void masked_scale(const T* x, const std::uint8_t* mask, double scale, T* out, std::int64_t n);

}  // namespace frugal::kernels::cpu
