// SummaryWriter's event files read back by an independent reader: every CRC, the version
// event, tags, values, steps and wall times; flushing per step and on the timer; damaged
// files detected; bad directories refused with a frugal::Error.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/error.h"
#include "event_reader.h"
#include "monitor/crc32c.h"
#include "monitor/event_file.h"
#include "monitor/summary_writer.h"
#include "scratch_dir.h"

using namespace frugal;
using namespace frugal::monitor;
using frugal::test::ScratchDir;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("CRC32C matches the standard check value and the bitwise reference",
          "[monitor][tensorboard]") {
  CHECK(crc32c("123456789") == 0xE3069283u);  // RFC 3720's check value for CRC-32C
  CHECK(crc32c("") == 0u);
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>((i * 131 + 7) & 0xFF));
  CHECK(crc32c(bytes) == frugal::test::reference_crc32c(bytes));
  CHECK(unmask_crc(mask_crc(0xDEADBEEFu)) == 0xDEADBEEFu);
  CHECK(mask_crc(0) == 0xa282ead8u);
}

TEST_CASE("A TFRecord frame is length, masked length CRC, data, masked data CRC",
          "[monitor][tensorboard]") {
  const std::string record = frame_record("abc");
  REQUIRE(record.size() == 8 + 4 + 3 + 4);
  CHECK(record.substr(0, 8) == std::string("\x03\0\0\0\0\0\0\0", 8));
  CHECK(record.substr(12, 3) == "abc");
  auto le32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(record[at + i])) << (8 * i);
    return v;
  };
  CHECK(le32(8) == mask_crc(frugal::test::reference_crc32c(record.substr(0, 8))));
  CHECK(le32(15) == mask_crc(frugal::test::reference_crc32c("abc")));
}

TEST_CASE(
    "SummaryWriter writes a version event, then every scalar with its tag, value, step and time",
    "[monitor][tensorboard]") {
  ScratchDir dir;
  const std::string log_dir = dir.file("run1/nested");  // created by the writer
  const double before = unix_time_now();
  std::string path;
  {
    SummaryWriter writer(log_dir);
    path = writer.file_path();
    for (std::int64_t step = 0; step < 5; ++step) {
      writer.add_scalar("train/loss", 2.5 / static_cast<double>(step + 1), step);
      writer.add_scalar("memory/allocated_MiB", 100.0 + static_cast<double>(step), step);
    }
    writer.add_scalar("explicit/time", 7.0, 99, 1234.5);
    writer.add_scalar("negative/step", -1.5, -3);
    writer.add_scalar("large/step", 1.0, std::int64_t{1} << 40);
    writer.add_scalar("special/values", std::numeric_limits<double>::infinity(), 100);
    CHECK(writer.events_written() == 1 + 10 + 4);
  }
  const double after = unix_time_now();
  const std::string name = std::filesystem::path(path).filename().string();
  CHECK(name.rfind("events.out.tfevents.", 0) == 0);
  CHECK(std::filesystem::path(path).parent_path() == std::filesystem::path(log_dir));

  const auto events = frugal::test::read_event_file(path);
  REQUIRE(events.size() == 15);
  CHECK(events[0].has_file_version);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK_FALSE(events[0].has_summary);
  CHECK(events[0].step == 0);
  CHECK(events[0].wall_time >= before - 1);
  CHECK(events[0].wall_time <= after + 1);
  for (std::int64_t step = 0; step < 5; ++step) {
    const auto& loss = events[1 + 2 * step];
    const auto& mem = events[2 + 2 * step];
    REQUIRE(loss.values.size() == 1);
    REQUIRE(mem.values.size() == 1);
    CHECK_FALSE(loss.has_file_version);
    CHECK(loss.step == step);
    CHECK(mem.step == step);
    CHECK(loss.values[0].tag == "train/loss");
    CHECK(loss.values[0].has_simple_value);
    CHECK(loss.values[0].simple_value == static_cast<float>(2.5 / static_cast<double>(step + 1)));
    CHECK(mem.values[0].tag == "memory/allocated_MiB");
    CHECK(mem.values[0].simple_value == static_cast<float>(100.0 + static_cast<double>(step)));
    CHECK(loss.wall_time >= events[0].wall_time);
    CHECK(loss.wall_time <= after + 1);
  }
  CHECK(events[11].values[0].tag == "explicit/time");
  CHECK(events[11].wall_time == 1234.5);
  CHECK(events[11].step == 99);
  CHECK(events[12].step == -3);
  CHECK(events[12].values[0].simple_value == -1.5f);
  CHECK(events[13].step == (std::int64_t{1} << 40));
  CHECK(std::isinf(events[14].values[0].simple_value));
}

TEST_CASE("SummaryWriter flushes a step when the next begins, and on its timer",
          "[monitor][tensorboard]") {
  ScratchDir dir;
  SECTION("per step") {
    SummaryWriter writer(dir.path().string());
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 1);  // the version, at once
    writer.add_scalar("a", 1, 1);
    writer.add_scalar("b", 2, 1);
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 1);  // step 1 still open
    writer.add_scalar("a", 3, 2);
    const auto events = frugal::test::read_event_file(writer.file_path());
    REQUIRE(events.size() == 3);  // step 1 complete on disk
    CHECK(events[2].values[0].tag == "b");
    writer.flush();
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 4);
  }
  SECTION("on the timer") {
    SummaryWriterOptions options;
    options.flush_each_step = false;
    options.flush_secs = 0;  // every add is past the deadline
    SummaryWriter writer(dir.path().string(), options);
    writer.add_scalar("a", 1, 1);
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 2);
  }
  SECTION("neither: only flush() and close() write") {
    SummaryWriterOptions options;
    options.flush_each_step = false;
    options.flush_secs = 3600;
    SummaryWriter writer(dir.path().string(), options);
    for (int step = 0; step < 4; ++step) writer.add_scalar("a", step, step);
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 1);
    writer.close();
    CHECK(frugal::test::read_event_file(writer.file_path()).size() == 5);
    CHECK_THROWS_AS(writer.add_scalar("a", 1, 9), frugal::Error);
  }
}

TEST_CASE("Two writers in one directory get separate files", "[monitor][tensorboard]") {
  ScratchDir dir;
  SummaryWriter a(dir.path().string()), b(dir.path().string());
  CHECK(a.file_path() != b.file_path());
}

TEST_CASE("A damaged event file is caught by its CRCs", "[monitor][tensorboard]") {
  ScratchDir dir;
  std::string path;
  {
    SummaryWriter writer(dir.path().string());
    writer.add_scalar("x", 1.0, 1);
    path = writer.file_path();
  }
  const std::string good = file_bytes(path);
  REQUIRE(frugal::test::parse_event_records(good).size() == 2);
  // Every single flipped bit is detected, in a length, a CRC or the data.
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    CHECK_THROWS(frugal::test::parse_event_records(bad));
  }
  CHECK_THROWS(frugal::test::parse_event_records(good.substr(0, good.size() - 1)));
}

TEST_CASE("SummaryWriter refuses what it cannot do with a frugal::Error",
          "[monitor][tensorboard]") {
  ScratchDir dir;
  { std::ofstream(dir.file("plain-file")) << "x"; }
  CHECK_THROWS_WITH(SummaryWriter(dir.file("plain-file")),
                    Catch::Contains("not a directory") || Catch::Contains("plain-file"));
  CHECK_THROWS_AS(SummaryWriter(""), frugal::Error);
  SummaryWriter writer(dir.path().string());
  CHECK_THROWS_AS(writer.add_scalar("", 1.0, 0), frugal::Error);
}
