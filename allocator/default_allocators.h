// The process-wide allocators: one caching allocator per device, created on first use with
// FRUGAL_ALLOC_CONF's settings, and one for pinned host memory. CPU tensors use
// cpu_allocator(); CUDA device memory comes from cuda_allocator(device).
#pragma once

#include "allocator/caching_allocator.h"

namespace frugal::alloc {

CachingAllocator& cpu_allocator();
// The caching allocator of CUDA device `device` (cudaMalloc, or expandable segments with
// expandable_segments:True). A frugal::Error saying why where there is no such device, or
// no CUDA in this build.
CachingAllocator& cuda_allocator(int device = 0);
// Page-locked host memory for staging copies to and from devices, with its own stats (see
// PinnedHostBackend): blocks are reused once the copies recorded on them have finished.
CachingAllocator& pinned_allocator();

}  // namespace frugal::alloc
