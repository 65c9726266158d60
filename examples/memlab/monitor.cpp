// frugal-memlab monitor: the monitoring tools on a few real training steps. The allocator's
// memory_summary(), the device view (what nvidia-smi would say), and the files a person looks
// at afterwards: the HTML memory report drawn from the allocator's history, its JSON
// snapshot, and TensorBoard event files, each read back and checked here.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "allocator/default_allocators.h"
#include "allocator/memory_report.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"
#include "monitor/crc32c.h"
#include "monitor/device_view.h"
#include "monitor/host_memory.h"
#include "monitor/summary_writer.h"

namespace frugal::memlab {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FRUGAL_CHECK(in.good(), "monitor: cannot read back " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// TFRecord framing: length (8 bytes), masked CRC32C of the length, data, masked CRC32C of
// the data. Returns the records whose both CRCs hold; a frugal::Error on the first bad one.
std::int64_t check_event_file(const std::string& path) {
  const std::string bytes = read_file(path);
  std::int64_t records = 0;
  for (std::size_t pos = 0; pos < bytes.size();) {
    FRUGAL_CHECK(pos + 12 <= bytes.size(), "monitor: " + path + " ends inside a record header");
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length, bytes.data() + pos, 8);
    std::memcpy(&length_crc, bytes.data() + pos + 8, 4);
    FRUGAL_CHECK(length_crc == monitor::masked_crc32c(bytes.data() + pos, 8),
                 "monitor: bad length CRC in " + path + " at byte " + std::to_string(pos));
    FRUGAL_CHECK(pos + 16 + length <= bytes.size(), "monitor: " + path + " ends inside a record");
    std::memcpy(&data_crc, bytes.data() + pos + 12 + length, 4);
    FRUGAL_CHECK(data_crc == monitor::masked_crc32c(bytes.data() + pos + 12, length),
                 "monitor: bad data CRC in " + path + " at byte " + std::to_string(pos));
    pos += 16 + length;
    ++records;
  }
  return records;
}

}  // namespace

int monitor_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "A few training steps with the allocator's memory history on and a TensorBoard writer;\n"
      "then memory_summary(), the device view, and the HTML memory report, its JSON snapshot\n"
      "and the event file written into --out (each read back and checked).");
  cli.option("out", "DIR", "where to write the report and the TensorBoard files", "memlab-monitor");
  cli.option("model", "NAME", "cnn, mobilenet or mlp", "cnn");
  cli.option("steps", "N", "training steps", "5");
  cli.option("batch-size", "N", "images per step", "32");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t steps = cli.get_int("steps"), batch = cli.get_int("batch-size");
  FRUGAL_CHECK(steps >= 1 && batch >= 1, "--steps and --batch-size must be >= 1");
  const fs::path out = cli.get("out");
  std::error_code ec;
  fs::create_directories(out, ec);
  FRUGAL_CHECK(!ec, "monitor: cannot create --out " + out.string() + ": " + ec.message());
  auto& allocator = alloc::cpu_allocator();
  allocator.record_history(std::size_t{1} << 16);

  std::string event_path;
  std::int64_t events_written = 0;
  {
    monitor::SummaryWriter writer((out / "tensorboard").string());
    manual_seed(0);
    auto model = nn::make_model(cli.get("model"));
    optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    for (std::int64_t s = 0; s < steps; ++s) {
      Tensor loss =
          cross_entropy(model->forward(randn({batch, 1, 28, 28})), randint(0, 10, {batch}));
      sgd.zero_grad();
      loss.backward();
      sgd.step();
      writer.add_scalar("loss", loss.item<float>(), s);
      writer.add_scalar("memory/allocated", static_cast<double>(allocated_now()), s);
      writer.add_scalar("memory/reserved", static_cast<double>(reserved_now()), s);
      writer.add_scalar("memory/host_rss", static_cast<double>(monitor::process_memory_info().rss),
                        s);
    }
    writer.close();
    event_path = writer.file_path();
    events_written = writer.events_written();
  }
  const std::string html = (out / "memory_report.html").string(),
                    snapshot = (out / "memory_snapshot.json").string();
  alloc::write_memory_report(allocator, html);
  alloc::write_memory_snapshot(allocator, snapshot);
  const std::uint64_t history_events = allocator.memory_snapshot().events_recorded;
  allocator.record_history(0);
  const std::string summary = allocator.memory_summary();
  const monitor::DeviceView devices = monitor::device_view();

  const std::int64_t records = check_event_file(event_path);
  const std::string page = read_file(html);
  const bool page_ok = page.find("<html") != std::string::npos &&
                       page.find("http://") == std::string::npos &&
                       page.find("https://") == std::string::npos;
  const std::string snap = read_file(snapshot);
  const bool snapshot_ok = snap.find("\"segments\"") != std::string::npos &&
                           snap.find("\"device_traces\"") != std::string::npos;

  Report report("monitor", cli.get("model") + ", " + std::to_string(steps) +
                               " training steps at batch " + std::to_string(batch) +
                               ", memory history on");
  report.columns({"output", "where", "size", "check"});
  const auto add = [&](const std::string& what, const std::string& path, const std::string& check,
                       bool ok) {
    JsonWriter j;
    j.field("output", what);
    j.field("path", path);
    j.field("bytes", static_cast<std::int64_t>(fs::file_size(path)));
    j.field("ok", ok);
    report.row({what, path, bytes_text(static_cast<std::int64_t>(fs::file_size(path))), check}, j);
  };
  add("HTML memory report", html,
      page_ok ? std::to_string(history_events) + " history events; no network references"
              : "NOT a self-contained page",
      page_ok);
  add("memory snapshot (JSON)", snapshot,
      snapshot_ok ? "segments and device_traces (the events) present" : "MISSING fields",
      snapshot_ok);
  add("TensorBoard event file", event_path,
      std::to_string(records) + " records, every CRC32C checked (" +
          std::to_string(events_written) + " events written)",
      records == events_written);
  report.note("open the HTML report in any browser (no network needed); `tensorboard --logdir " +
              (out / "tensorboard").string() +
              "` shows loss, memory/allocated, memory/reserved and memory/host_rss");
  report.note("device view: " + devices.str());
  if (!cli.has("json")) std::printf("%s\n", summary.c_str());
  JsonWriter& f = report.figures();
  f.field("memory_summary", summary);
  f.raw("device_view", devices.json());
  f.field("html_report", html);
  f.field("snapshot", snapshot);
  f.field("event_file", event_path);
  f.field("event_records", records);
  f.field("events_written", events_written);
  f.field("history_events", static_cast<std::int64_t>(history_events));
  f.field("outputs_ok", page_ok && snapshot_ok && records == events_written);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
