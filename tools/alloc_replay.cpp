// frugal-alloc-replay: replays an allocation trace on a simulated device and reports what
// the caching allocator reserved for it, and the smallest device that completes it.
#include <cstdio>
#include <iostream>
#include <sstream>

#include "allocator/trace_replay.h"
#include "common/cli.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "common/progress.h"

using namespace frugal;
using namespace frugal::alloc;

namespace {

int run(int argc, char** argv) {
  CommandLine cli("frugal-alloc-replay",
                  "Replays a frugal-alloc-trace v1 file on a simulated device with frugal's\n"
                  "caching allocator and reports peak requested, allocated and reserved bytes,\n"
                  "out-of-memory errors and the time per event.");
  cli.positional("TRACE", "the trace file");
  cli.option("capacity", "BYTES", "device capacity, e.g. 256MiB (default: unlimited, 1 TiB)");
  cli.option("conf", "STRING", "allocator settings, as FRUGAL_ALLOC_CONF (default: that variable)");
  cli.flag("min-capacity", "also find the smallest capacity (2 MiB steps) that completes");
  cli.flag("json", "print the results as JSON");
  cli.option("metrics-json", "FILE", "also write the results as JSON to FILE");
  if (!cli.parse(argc, argv)) return 0;

  const std::string path = cli.positionals()[0];
  const Trace trace = load_trace(path);
  const AllocatorConfig config = cli.has("conf") ? AllocatorConfig::parse(cli.get("conf"))
                                                 : AllocatorConfig::from_environment();
  std::size_t capacity = kUnlimitedCapacity;
  if (cli.has("capacity")) {
    const std::int64_t bytes = parse_bytes(cli.get("capacity"));
    if (bytes <= 0) throw ConfigError("frugal-alloc-replay: --capacity must be positive");
    capacity = static_cast<std::size_t>(bytes);
  }
  const ReplayResult r = replay_trace(trace, capacity, config);
  // Time per event: the median of a few repeats, as one replay takes about a millisecond.
  std::vector<double> ns;
  for (int i = 0; i < 5; ++i) ns.push_back(replay_trace(trace, capacity, config).ns_per_event());
  std::sort(ns.begin(), ns.end());

  MinCapacity min;
  if (cli.has("min-capacity")) {
    ProgressBar bar("searching", 24);
    min = find_min_capacity(trace, config, std::size_t{2} << 20, [&](int n) { bar.update(n); });
    bar.finish();
  }

  JsonWriter json;
  json.field("trace", path);
  json.field("config", config.to_string());
  json.field("capacity", capacity == kUnlimitedCapacity ? std::int64_t{-1}
                                                        : static_cast<std::int64_t>(capacity));
  json.field("events", static_cast<std::int64_t>(r.events));
  json.field("peak_requested", r.peak_requested);
  json.field("peak_allocated", r.peak_allocated);
  json.field("peak_reserved", r.peak_reserved);
  json.field("reserved_over_allocated", r.reserved_over_allocated());
  json.field("ooms", static_cast<std::int64_t>(r.ooms));
  json.field("num_alloc_retries", r.stats.num_alloc_retries);
  json.field("ns_per_event", ns[ns.size() / 2]);
  if (cli.has("min-capacity")) {
    json.field("min_capacity", static_cast<std::int64_t>(min.capacity));
    json.field("min_capacity_over_peak_requested",
               static_cast<double>(min.capacity) / static_cast<double>(r.peak_requested));
  }
  if (cli.has("metrics-json")) json.write_file(cli.get("metrics-json"));
  if (cli.has("json")) {
    std::cout << json.str() << "\n";
    return 0;
  }

  auto line = [](const char* name, const std::string& value) {
    std::printf("%-26s %s\n", name, value.c_str());
  };
  auto bytes = [](std::int64_t b) { return std::to_string(b) + " B (" + format_bytes(b) + ")"; };
  char text[64];
  line("trace", path + " (" + std::to_string(r.events) + " events)");
  line("config", config.to_string());
  line("capacity", capacity == kUnlimitedCapacity ? "unlimited" : bytes(capacity));
  line("peak requested", bytes(r.peak_requested));
  line("peak allocated", bytes(r.peak_allocated));
  line("peak reserved", bytes(r.peak_reserved));
  std::snprintf(text, sizeof text, "%.4f", r.reserved_over_allocated());
  line("reserved / allocated", text);
  line("out-of-memory errors", std::to_string(r.ooms));
  line("alloc retries", std::to_string(r.stats.num_alloc_retries));
  std::snprintf(text, sizeof text, "%.1f", ns[ns.size() / 2]);
  line("ns per event (median of 5)", text);
  if (cli.has("min-capacity")) {
    std::snprintf(text, sizeof text, " = %.4f x peak requested (%d replays)",
                  static_cast<double>(min.capacity) / r.peak_requested, min.replays);
    line("min capacity", bytes(static_cast<std::int64_t>(min.capacity)) + text);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
