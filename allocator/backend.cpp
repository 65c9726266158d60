// Default answers of a Backend without virtual-memory support.
#include "allocator/backend.h"

#include "common/error.h"

namespace frugal::alloc {

void* Backend::reserve_address_range(std::size_t) {
  throw Error("backend '" + name() + "' does not support virtual memory (expandable segments)");
}
void Backend::release_address_range(void*, std::size_t) {}
bool Backend::map(void*, std::size_t) {
  throw Error("backend '" + name() + "' does not support virtual memory (expandable segments)");
}
void Backend::unmap(void*, std::size_t) {}

}  // namespace frugal::alloc
