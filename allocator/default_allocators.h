// The process-wide allocators behind tensor storage: one caching allocator per device,
// created on first use with FRUGAL_ALLOC_CONF's settings. CPU tensors use cpu_allocator().
#pragma once

#include "allocator/caching_allocator.h"

namespace frugal::alloc {

CachingAllocator& cpu_allocator();

}  // namespace frugal::alloc
