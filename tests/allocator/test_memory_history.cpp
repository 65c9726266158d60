// Memory history: the ring keeps the newest events in order with their tags and totals,
// the JSON snapshot reads back with every segment, block and event, the HTML report is
// self-contained, and a real forward/backward tags its memory with modules and ops.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "allocator/caching_allocator.h"
#include "allocator/memory_report.h"
#include "allocator/simulated_device.h"
#include "data/json.h"
#include "nn/nn.h"

using namespace frugal::alloc;
namespace json = frugal::data::json;

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

std::string text_of(const json::Value* v) {
  REQUIRE(v != nullptr);
  REQUIRE(v->is_string());
  return v->string;
}
std::int64_t int_of(const json::Value* v) {
  REQUIRE(v != nullptr);
  REQUIRE(v->is_integer());
  return v->integer;
}

}  // namespace

TEST_CASE("the history records alloc, free and segment events with tags and totals") {
  auto device = std::make_shared<SimulatedDevice>(64 * MiB);
  CachingAllocator allocator(device, AllocatorConfig::parse("expandable_segments:False"));
  allocator.record_history(100);
  Allocation a, b;
  {
    ScopedModuleTag module("features");
    ScopedModuleTag child("3", "Conv2d");
    ScopedOpTag op("conv2d");
    a = allocator.allocate(3 * MiB);
  }
  b = allocator.allocate(1000);
  allocator.free(a);
  allocator.empty_cache();
  const auto snap = allocator.memory_snapshot();
  REQUIRE(snap.events.size() == 6);
  const auto& e = snap.events;
  CHECK(e[0].action == HistoryAction::kSegmentAlloc);
  CHECK(e[0].size == 20 * MiB);  // a mid-size request gets a 20 MiB segment
  CHECK(history_tag_name(e[0].module) == "features.3 (Conv2d)");
  CHECK(e[1].action == HistoryAction::kAlloc);
  CHECK(e[1].size == 3 * MiB);
  CHECK(e[1].address == reinterpret_cast<std::uintptr_t>(a.ptr));
  CHECK(history_tag_name(e[1].op) == "conv2d");
  CHECK(history_tag_name(e[1].module) == "features.3 (Conv2d)");
  CHECK(e[1].allocated == std::int64_t(3 * MiB));
  CHECK(e[1].reserved == std::int64_t(20 * MiB));
  CHECK(e[2].action == HistoryAction::kSegmentAlloc);  // the small pool's first segment
  CHECK(e[3].action == HistoryAction::kAlloc);
  CHECK(e[3].op == 0);
  CHECK(e[3].module == 0);
  // The free carries the tags of the allocation it ends, and the totals after it.
  CHECK(e[4].action == HistoryAction::kFreeCompleted);
  CHECK(e[4].address == e[1].address);
  CHECK(history_tag_name(e[4].module) == "features.3 (Conv2d)");
  CHECK(e[4].allocated == std::int64_t(512 + 512));  // b: 1000 bytes round to 1024
  CHECK(e[5].action == HistoryAction::kSegmentFree);
  CHECK(e[5].reserved == std::int64_t(2 * MiB));
  for (std::size_t i = 1; i < e.size(); ++i) CHECK(e[i].time >= e[i - 1].time);
  allocator.free(b);
}

TEST_CASE("the ring keeps the newest events, oldest first") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(64 * MiB));
  allocator.record_history(8);
  for (int i = 0; i < 20; ++i) allocator.free(allocator.allocate(4096 * (i + 1)));
  const auto snap = allocator.memory_snapshot();
  CHECK(snap.history_capacity == 8);
  CHECK(snap.events_recorded > 8);
  REQUIRE(snap.events.size() == 8);
  // The last pair is 20 * 4096 bytes, allocated then freed.
  CHECK(snap.events[6].action == HistoryAction::kAlloc);
  CHECK(snap.events[6].size == 20 * 4096);
  CHECK(snap.events[7].action == HistoryAction::kFreeCompleted);
  allocator.record_history(0);
  CHECK_FALSE(allocator.history_enabled());
  CHECK(allocator.memory_snapshot().events.empty());
}

TEST_CASE("an OOM is recorded with the bytes requested") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(16 * MiB));
  allocator.record_history(16);
  ScopedOpTag op("matmul");
  CHECK_THROWS_AS(allocator.allocate(32 * MiB), frugal::OutOfMemoryError);
  const auto snap = allocator.memory_snapshot();
  REQUIRE(!snap.events.empty());
  CHECK(snap.events.back().action == HistoryAction::kOom);
  CHECK(snap.events.back().size == 32 * MiB);
  CHECK(history_tag_name(snap.events.back().op) == "matmul");
}

TEST_CASE("expandable segments record their mapping and unmapping") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(64 * MiB));
  allocator.record_history(16);
  Allocation a = allocator.allocate(5 * MiB);
  allocator.free(a);
  allocator.empty_cache();
  const auto snap = allocator.memory_snapshot();
  REQUIRE(snap.events.size() == 4);
  CHECK(snap.events[0].action == HistoryAction::kSegmentMap);
  CHECK(snap.events[0].size == 6 * MiB);  // whole 2 MiB granules
  CHECK(snap.events[1].action == HistoryAction::kAlloc);
  CHECK(snap.events[2].action == HistoryAction::kFreeCompleted);
  CHECK(snap.events[3].action == HistoryAction::kSegmentUnmap);
  CHECK(snap.events[3].reserved == 0);
}

TEST_CASE("the JSON snapshot reads back with every segment, block and event") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(256 * MiB),
                             AllocatorConfig::parse("expandable_segments:False"));
  allocator.record_history(1000);
  std::vector<Allocation> live;
  {
    ScopedModuleTag module("classifier");
    ScopedOpTag op("linear \"fc\"");  // quotes must survive the round trip
    for (int i = 1; i <= 5; ++i) live.push_back(allocator.allocate(i * 700 * 1024));
  }
  allocator.free(live[1]);
  live.erase(live.begin() + 1);
  const auto snap = allocator.memory_snapshot();
  const json::Value root = json::parse(memory_snapshot_json(snap));
  CHECK(text_of(root.find("format")) == "frugal-memory-snapshot v1");
  CHECK(int_of(root.find("allocated")) == std::int64_t(snap.allocated));
  CHECK(int_of(root.find("reserved")) == std::int64_t(snap.reserved));
  const json::Value* history = root.find("history");
  REQUIRE(history != nullptr);
  CHECK(int_of(history->find("max_entries")) == 1024);  // rounded up to a power of two
  CHECK(int_of(history->find("kept")) == std::int64_t(snap.events.size()));

  const json::Value* segments = root.find("segments");
  REQUIRE(segments != nullptr);
  REQUIRE(segments->array.size() == snap.segments.size());
  std::int64_t allocated = 0;
  for (std::size_t i = 0; i < snap.segments.size(); ++i) {
    const json::Value& s = segments->array[i];
    CHECK(int_of(s.find("address")) == std::int64_t(snap.segments[i].address));
    CHECK(int_of(s.find("total_size")) == std::int64_t(snap.segments[i].size));
    const json::Value* blocks = s.find("blocks");
    REQUIRE(blocks != nullptr);
    REQUIRE(blocks->array.size() == snap.segments[i].blocks.size());
    for (std::size_t j = 0; j < blocks->array.size(); ++j) {
      const json::Value& b = blocks->array[j];
      const auto& info = snap.segments[i].blocks[j];
      CHECK(int_of(b.find("address")) == std::int64_t(info.address));
      CHECK(int_of(b.find("size")) == std::int64_t(info.size));
      CHECK(text_of(b.find("state")) == (info.allocated ? "active_allocated" : "inactive"));
      if (info.allocated) {
        allocated += int_of(b.find("size"));
        CHECK(text_of(b.find("module")) == "classifier");
        CHECK(text_of(b.find("op")) == "linear \"fc\"");
      }
    }
  }
  CHECK(allocated == std::int64_t(snap.allocated));

  const json::Value* traces = root.find("device_traces");
  REQUIRE(traces != nullptr);
  REQUIRE(traces->array.size() == 1);
  const auto& events = traces->array[0].array;
  REQUIRE(events.size() == snap.events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const HistoryEvent& e = snap.events[i];
    CHECK(text_of(events[i].find("action")) == history_action_name(e.action));
    CHECK(int_of(events[i].find("addr")) == std::int64_t(e.address));
    CHECK(int_of(events[i].find("size")) == std::int64_t(e.size));
    CHECK(int_of(events[i].find("time_ns")) == std::int64_t(e.time));
    CHECK(int_of(events[i].find("allocated")) == e.allocated);
    CHECK(int_of(events[i].find("reserved")) == e.reserved);
    CHECK(text_of(events[i].find("module")) == history_tag_name(e.module));
  }
  for (const Allocation& a : live) allocator.free(a);
}

TEST_CASE("the HTML report embeds the snapshot and loads nothing from the network") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(64 * MiB));
  allocator.record_history(100);
  ScopedModuleTag module("evil</script><script>alert(1)</script>");
  allocator.free(allocator.allocate(MiB));
  const std::string path = "memory_report_test.html";
  write_memory_report(allocator, path);
  std::ifstream file(path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string page = buffer.str();
  std::remove(path.c_str());
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("frugal-memory-snapshot v1") != std::string::npos);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  // The tag's "</script>" is escaped inside the embedded JSON: the page has exactly its
  // own two script elements.
  std::size_t closes = 0;
  for (std::size_t at = page.find("</script>"); at != std::string::npos;
       at = page.find("</script>", at + 1)) {
    ++closes;
  }
  CHECK(closes == 2);
  CHECK_THROWS_AS(write_memory_report(allocator, "/nonexistent-dir/report.html"), frugal::Error);
}

TEST_CASE("a forward and backward tag their memory with modules and ops") {
  using namespace frugal;
  CachingAllocator& allocator = cpu_allocator();
  allocator.record_history(4096);
  {
    auto model =
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(64, 32), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Linear>(32, 10)});
    Tensor x = randn({16, 64});
    Tensor loss = sum(model->forward(x));
    loss.backward();
  }
  const auto snap = allocator.memory_snapshot();
  allocator.record_history(0);
  bool forward_linear = false, backward_in_module = false;
  for (const HistoryEvent& e : snap.events) {
    if (e.action != HistoryAction::kAlloc) continue;
    const std::string op = history_tag_name(e.op), module = history_tag_name(e.module);
    // The first layer's output: allocated in module "0", named by the op that recorded it.
    if (module == "0 (Linear)" && op == "linear") forward_linear = true;
    // Its backward allocates in the module that recorded the node.
    if (module == "0 (Linear)" && op == "linear backward") backward_in_module = true;
  }
  CHECK(forward_linear);
  CHECK(backward_in_module);
}

TEST_CASE("threads record their own tags, and every event is kept") {
  CachingAllocator allocator(std::make_shared<SimulatedDevice>(std::size_t{1} << 34));
  allocator.record_history(1 << 16);
  constexpr int kThreads = 4, kPairs = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&allocator, t] {
      ScopedModuleTag module("thread" + std::to_string(t));
      for (int i = 0; i < kPairs; ++i) {
        allocator.free(allocator.allocate(512 * (1 + (i * 7 + t) % 300), static_cast<StreamId>(t)));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const auto snap = allocator.memory_snapshot();
  std::vector<int> allocs(kThreads), frees(kThreads);
  for (const HistoryEvent& e : snap.events) {
    const std::string module = history_tag_name(e.module);
    REQUIRE(module.rfind("thread", 0) == 0);
    const int t = std::stoi(module.substr(6));
    CHECK(e.stream == static_cast<StreamId>(t));  // each thread allocates on its own stream
    if (e.action == HistoryAction::kAlloc) ++allocs[t];
    if (e.action == HistoryAction::kFreeCompleted) ++frees[t];
  }
  for (int t = 0; t < kThreads; ++t) {
    CHECK(allocs[t] == kPairs);
    CHECK(frees[t] == kPairs);
  }
  CHECK(snap.events.back().allocated == 0);
}
