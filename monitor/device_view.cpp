// The device view's text and JSON forms, shared by the CUDA and non-CUDA builds.
#include "monitor/device_view.h"

#include <sstream>

#include "common/format.h"
#include "common/json_writer.h"

namespace frugal::monitor {

std::string DeviceView::str() const {
  if (devices.empty()) return "no CUDA device: " + unavailable_reason;
  std::ostringstream out;
  for (const DeviceMemory& d : devices) {
    out << "cuda:" << d.index << " " << d.name << " (sm_" << d.compute_capability << "): used "
        << format_bytes(d.used) << " / " << format_bytes(d.total) << ", free "
        << format_bytes(d.free);
    if (d.frugal_reserved >= 0)
      out << "; frugal reserved " << format_bytes(d.frugal_reserved) << ", allocated "
          << format_bytes(d.frugal_allocated) << ", outside frugal "
          << format_bytes(d.outside_frugal());
    if (d.process_used >= 0) out << "; this process (NVML) " << format_bytes(d.process_used);
    out << "\n";
  }
  std::string text = out.str();
  text.pop_back();
  return text;
}

std::string DeviceView::json() const {
  JsonWriter j;
  j.field("built", cuda_built);
  j.field("available", available());
  j.field("reason", unavailable_reason);
  std::vector<std::string> list;
  for (const DeviceMemory& d : devices) {
    JsonWriter e;
    e.field("index", static_cast<std::int64_t>(d.index));
    e.field("name", d.name);
    e.field("compute_capability", static_cast<std::int64_t>(d.compute_capability));
    e.field("total_bytes", d.total);
    e.field("free_bytes", d.free);
    e.field("used_bytes", d.used);
    e.field("frugal_reserved_bytes", d.frugal_reserved);
    e.field("frugal_allocated_bytes", d.frugal_allocated);
    e.field("process_used_bytes", d.process_used);
    e.field("process_used_note", d.process_used_note);
    list.push_back(e.str());
  }
  j.raw("devices", JsonWriter::array(list));
  return j.str();
}

}  // namespace frugal::monitor
