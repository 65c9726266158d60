// The flat, PyTorch-named view of DeviceStats.
#include "allocator/stats.h"

namespace frugal::alloc {

namespace {

void put(std::map<std::string, std::int64_t>& out, const std::string& prefix, const Stat& s) {
  out[prefix + ".current"] = s.current;
  out[prefix + ".peak"] = s.peak;
  out[prefix + ".allocated"] = s.allocated;
  out[prefix + ".freed"] = s.freed();
}

void put(std::map<std::string, std::int64_t>& out, const std::string& name,
         const StatArray& array) {
  static const char* const kTypes[] = {"all", "small_pool", "large_pool"};
  for (int i = 0; i < 3; ++i) put(out, name + "." + kTypes[i], array.by_type[i]);
}

}  // namespace

std::map<std::string, std::int64_t> DeviceStats::as_map() const {
  std::map<std::string, std::int64_t> out;
  put(out, "allocation", allocation);
  put(out, "segment", segment);
  put(out, "active", active);
  put(out, "inactive_split", inactive_split);
  put(out, "allocated_bytes", allocated_bytes);
  put(out, "reserved_bytes", reserved_bytes);
  put(out, "active_bytes", active_bytes);
  put(out, "inactive_split_bytes", inactive_split_bytes);
  put(out, "requested_bytes", requested_bytes);
  put(out, "oversize_allocations", oversize_allocations);
  put(out, "oversize_segments", oversize_segments);
  out["num_alloc_retries"] = num_alloc_retries;
  out["num_ooms"] = num_ooms;
  out["num_sync_all_streams"] = num_sync_all_streams;
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
  out["max_split_size"] = max_split_size;
  return out;
}

}  // namespace frugal::alloc
