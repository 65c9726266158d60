// The machine report behind frugal-doctor: the CPU-info parser, the device view's "no CUDA
// device" answer, each advice rule on a made-up machine, and the live report's sanity.
#include <catch2/catch.hpp>

#include <algorithm>

#include "allocator/cuda_device.h"
#include "monitor/cpu_info.h"
#include "monitor/device_view.h"
#include "monitor/machine_report.h"
#include "monitor/nvml_process_memory.h"

using namespace frugal;
using namespace frugal::monitor;

namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;
constexpr std::int64_t MiB = std::int64_t{1} << 20;

// A comfortable machine: nothing to advise.
MachineReport healthy() {
  MachineReport r;
  r.memory.total = 64 * GiB;
  r.memory.available = 60 * GiB;
  r.memory.free = 50 * GiB;
  r.memory.swap_total = 8 * GiB;
  r.memory.swap_free = 8 * GiB;
  r.memlock_soft = r.memlock_hard = -1;
  r.transparent_hugepages = "madvise";
  r.cpu.model = "test cpu";
  r.cpu.logical_cores = r.cpu.usable_cores = 8;
  r.cpu.cpu = parse_cpu_flags("avx2 fma f16c avx512f avx512bw avx512_bf16");
  r.cpu.build = r.cpu.cpu;
  DeviceMemory d;
  d.name = "test gpu";
  d.total = 80 * GiB;
  d.free = 79 * GiB;
  d.used = 1 * GiB;
  r.devices.cuda_built = true;
  r.devices.devices.push_back(d);
  r.alloc_conf_parsed = "expandable_segments:True";
  return r;
}

bool has_advice(const std::vector<Advice>& advice, Advice::Level level, const std::string& topic,
                const std::string& words) {
  return std::any_of(advice.begin(), advice.end(), [&](const Advice& a) {
    return a.level == level && a.topic == topic && a.text.find(words) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("parse_cpuinfo reads the model and the vector-unit flags", "[monitor][doctor]") {
  const CpuInfo info = parse_cpuinfo(
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
      "flags\t\t: fpu sse2 avx f16c fma avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile\n\n"
      "processor\t: 1\nmodel name\t: other\n");
  CHECK(info.model == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(info.cpu.avx2);
  CHECK(info.cpu.f16c);
  CHECK(info.cpu.avx512_bf16);
  CHECK(info.cpu.amx_tile);
  CHECK_FALSE(info.cpu.avx512_fp16);
  CHECK_FALSE(parse_cpu_flags("avx512f").avx2);
  CHECK_FALSE(parse_cpu_flags("avx512fx").avx512f);  // whole flags only
}

TEST_CASE("A healthy machine gets no warnings", "[monitor][doctor]") {
  for (const Advice& a : advise(healthy())) {
    INFO(a.topic << ": " << a.text);
    CHECK(a.level == Advice::Level::kNote);
  }
}

TEST_CASE("Each advice rule fires on the machine it is about", "[monitor][doctor]") {
  using L = Advice::Level;
  MachineReport r = healthy();
  r.memory.swap_total = r.memory.swap_free = 0;
  r.memory.total = 8 * GiB;
  r.memory.available = 7 * GiB;
  CHECK(has_advice(advise(r), L::kWarning, "swap", "no swap and only 8.00 GiB"));
  r.memory.total = 64 * GiB;
  CHECK(has_advice(advise(r), L::kNote, "swap", "no swap"));
  CHECK_FALSE(has_advice(advise(r), L::kWarning, "swap", ""));
  // A container limit counts as the RAM.
  r.cgroup_memory_limit = 4 * GiB;
  CHECK(has_advice(advise(r), L::kWarning, "swap", "only 4.00 GiB"));
  CHECK(has_advice(advise(r), L::kWarning, "container", "limited to 4.00 GiB"));

  r = healthy();
  r.memory.available = 2 * GiB;
  CHECK(has_advice(advise(r), L::kWarning, "memory", "only 2.00 GiB of 64.00 GiB"));

  r = healthy();
  r.memlock_soft = 8 * MiB;
  CHECK(has_advice(advise(r), L::kNote, "memlock", "cudaHostAlloc"));  // not capped with CUDA
  r.devices.devices.clear();
  r.devices.unavailable_reason = "no CUDA device is present";
  const auto no_gpu = advise(r);
  CHECK(has_advice(no_gpu, L::kWarning, "memlock", "RLIMIT_MEMLOCK is 8.00 MiB"));
  CHECK(has_advice(no_gpu, L::kNote, "cuda", "no CUDA device is present"));

  r = healthy();
  r.transparent_hugepages = "never";
  CHECK(has_advice(advise(r), L::kWarning, "hugepages", "transparent huge pages are off"));

  r = healthy();
  r.cpu.cpu = parse_cpu_flags("avx2 fma f16c avx512f");
  r.cpu.build = r.cpu.cpu;
  CHECK(has_advice(advise(r), L::kNote, "amp", "no AVX512_BF16"));
  r.cpu.build = parse_cpu_flags("avx2 fma f16c");
  CHECK(has_advice(advise(r), L::kWarning, "cpu", "rebuild on this machine"));
  // With runtime dispatch the kernels pick their level, whatever the library was compiled for;
  // only a forced level below the best, or an impossible one, is worth saying.
  r.cpu.kernels_dispatch = true;
  r.cpu.kernels_level = r.cpu.kernels_best = "avx512";
  CHECK_FALSE(has_advice(advise(r), L::kWarning, "cpu", "rebuild on this machine"));
  CHECK_FALSE(has_advice(advise(r), L::kNote, "cpu", "kernels run at"));
  r.cpu.kernels_level = "avx2";
  r.cpu.kernels_description = "avx2 (forced by FRUGAL_CPU_ISA; detected avx512)";
  CHECK(has_advice(advise(r), L::kNote, "cpu", "below the avx512 this CPU supports"));
  r.cpu.kernels_level.clear();
  r.cpu.kernels_level_error = true;
  r.cpu.kernels_description = "error: FRUGAL_CPU_ISA=avx3 is not a level";
  CHECK(has_advice(advise(r), L::kError, "cpu", "FRUGAL_CPU_ISA=avx3 is not a level"));
  r.cpu.kernels_level_error = false;
  r.cpu.kernels_dispatch = false;
  r.cpu.cpu = r.cpu.build = parse_cpu_flags("sse2");
  CHECK(has_advice(advise(r), L::kWarning, "cpu", "no AVX2"));
  CHECK(has_advice(advise(r), L::kNote, "amp", "no F16C"));

  r = healthy();
  r.cpu.usable_cores = 2;
  CHECK(has_advice(advise(r), L::kNote, "cpu", "2 of the 8 cores"));

  r = healthy();
  r.devices.devices[0].free = 10 * GiB;
  CHECK(has_advice(advise(r), L::kWarning, "cuda", "cuda:0 has only 10.00 GiB free of 80.00 GiB"));

  r = healthy();
  r.alloc_conf_error = "FRUGAL_ALLOC_CONF: unknown key 'x'";
  CHECK(has_advice(advise(r), L::kError, "allocator", "unknown key 'x'"));
}

TEST_CASE("The device view answers 'no CUDA device' with the reason, or lists the devices",
          "[monitor][device]") {
  const DeviceView view = device_view();
  CHECK(view.cuda_built == cuda::is_built());
  if (!cuda::is_available()) {
    CHECK_FALSE(view.available());
    CHECK_FALSE(view.unavailable_reason.empty());
    CHECK(view.str() == "no CUDA device: " + view.unavailable_reason);
    CHECK_THAT(view.json(),
               Catch::Contains("\"available\": false") && Catch::Contains("\"devices\": []"));
    return;
  }
  REQUIRE(static_cast<int>(view.devices.size()) == cuda::device_count());
  for (const DeviceMemory& d : view.devices) {
    CHECK(d.total > 0);
    CHECK(d.free > 0);
    CHECK(d.free <= d.total);
    CHECK(d.used == d.total - d.free);
    CHECK(d.frugal_reserved >= 0);
    CHECK_FALSE(d.name.empty());
  }
  CHECK_THAT(view.str(), Catch::StartsWith("cuda:0 "));
}

TEST_CASE("NVML's per-process figure is a number, or unknown with the reason",
          "[monitor][device]") {
  // A bus id no machine has: the reason is the missing driver library, or the unknown device.
  const NvmlProcessMemory none = nvml_process_memory("ffff:ff:1f.7");
  CHECK(none.bytes == -1);
  CHECK_THAT(none.note, Catch::Contains("libnvidia-ml") ||
                            Catch::Contains("PCI bus id ffff:ff:1f.7") ||
                            Catch::Contains("nvmlInit"));
  for (const DeviceMemory& d : device_view().devices) {
    INFO("cuda:" << d.index << " " << d.process_used_note);
    CHECK((d.process_used >= 0) == d.process_used_note.empty());
    if (d.process_used >= 0) CHECK(d.process_used <= d.used);
  }
}

TEST_CASE("The live machine report is filled in", "[monitor][doctor]") {
  const MachineReport r = collect_machine_report();
  CHECK(r.memory.total > 0);
  CHECK(r.memory.available > 0);
  CHECK(r.cpu.logical_cores >= 1);
  CHECK(r.cpu.usable_cores >= 1);
  CHECK(r.cpu.usable_cores <= r.cpu.logical_cores);
  CHECK_FALSE(r.cpu.model.empty());
  CHECK((r.memlock_soft == -1 || r.memlock_soft >= 0));
  CHECK(r.devices.available() == cuda::is_available());
  const std::string text = report_text(r, advise(r));
  CHECK_THAT(text, Catch::Contains("RAM total") && Catch::Contains("memlock limit") &&
                       Catch::Contains("advice"));
}
