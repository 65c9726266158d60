// Host memory like psutil: the /proc parsers on fixed texts, and the live numbers moving
// the right way when a large frugal tensor is touched.
#include <catch2/catch.hpp>

#include "allocator/default_allocators.h"
#include "engine/frugal.h"
#include "monitor/host_memory.h"
#include "monitor/proc_files.h"

using namespace frugal;
using namespace frugal::monitor;

TEST_CASE("/proc/self/status gives rss, peak rss, vms and swap in bytes", "[monitor][host]") {
  const char* status =
      "Name:\tfrugal-train\nVmPeak:\t  900000 kB\nVmSize:\t  800000 kB\nVmHWM:\t  120000 kB\n"
      "VmRSS:\t  100000 kB\nVmSwap:\t       12 kB\nThreads:\t3\n";
  const ProcessMemory m = parse_proc_status(status);
  CHECK(m.rss == 100000 * 1024LL);
  CHECK(m.peak_rss == 120000 * 1024LL);
  CHECK(m.vms == 800000 * 1024LL);
  CHECK(m.swap == 12 * 1024LL);
  CHECK(m.uss == -1);  // only the full variant reads it
  CHECK(find_kb_field(status, "Threads") == 3);
  CHECK(find_kb_field(status, "VmRS") == std::nullopt);  // whole keys only
}

TEST_CASE("USS is Private_Clean + Private_Dirty (+ Private_Hugetlb), summed over smaps",
          "[monitor][host]") {
  const char* rollup =
      "00400000-7ffd00000000 ---p 00000000 00:00 0  [rollup]\nRss:  5000 kB\nPss:  4000 kB\n"
      "Pss_Anon:  3000 kB\nShared_Clean: 1000 kB\nPrivate_Clean:  700 kB\nPrivate_Dirty:  3000 kB\n"
      "Private_Hugetlb:  2048 kB\n";
  ProcessMemory m;
  parse_smaps(rollup, m);
  CHECK(m.uss == (700 + 3000 + 2048) * 1024LL);
  CHECK(m.pss == 4000 * 1024LL);  // Pss_Anon is not Pss
  const char* smaps =
      "a-b r-xp\nPss: 10 kB\nPrivate_Clean: 4 kB\nPrivate_Dirty: 0 kB\nc-d rw-p\nPss: 6 kB\n"
      "Private_Clean: 0 kB\nPrivate_Dirty: 8 kB\n";
  ProcessMemory n;
  parse_smaps(smaps, n);
  CHECK(n.uss == 12 * 1024LL);
  CHECK(n.pss == 16 * 1024LL);
}

TEST_CASE("/proc/meminfo gives RAM and swap", "[monitor][host]") {
  const SystemMemory m = parse_meminfo(
      "MemTotal:  16000000 kB\nMemFree:  1000000 kB\nMemAvailable:  8000000 kB\nSwapTotal:  "
      "2000000 kB\n"
      "SwapFree:  1500000 kB\n");
  CHECK(m.total == 16000000 * 1024LL);
  CHECK(m.available == 8000000 * 1024LL);
  CHECK(m.free == 1000000 * 1024LL);
  CHECK(m.swap_used() == 500000 * 1024LL);
  // Kernels before 3.14 have no MemAvailable: free is the best answer.
  CHECK(parse_meminfo("MemTotal: 10 kB\nMemFree: 4 kB\n").available == 4 * 1024);
}

TEST_CASE("Live host memory: consistent figures, and RSS and USS grow with a touched tensor",
          "[monitor][host]") {
  const ProcessMemory before = process_memory_full_info();
  REQUIRE(before.rss > 0);
  CHECK(before.peak_rss >= before.rss);
  CHECK(before.uss > 0);
  CHECK(before.uss <= before.rss + (1 << 20));  // private pages are resident pages (sampled apart)
  const SystemMemory system = system_memory();
  CHECK(system.total > 0);
  CHECK(system.available > 0);
  CHECK(system.available <= system.total);
  CHECK(system.swap_total >= 0);

  auto& allocator = alloc::cpu_allocator();
  const auto reserved_before = static_cast<std::int64_t>(allocator.memory_reserved());
  const Tensor big = zeros({std::int64_t{33} << 20});  // 132 MiB of float32, every page written
  const auto reserved_growth =
      static_cast<std::int64_t>(allocator.memory_reserved()) - reserved_before;
  const ProcessMemory after = process_memory_full_info();
  REQUIRE(reserved_growth >= (std::int64_t{132} << 20));
  CHECK(after.rss - before.rss >= reserved_growth * 3 / 4);
  CHECK(after.uss - before.uss >= reserved_growth * 3 / 4);
  CHECK(after.peak_rss >= after.rss);
}

TEST_CASE("HostMemorySampler keeps one sample per call with its index", "[monitor][host]") {
  HostMemorySampler sampler(/*full=*/true);
  for (int epoch = 1; epoch <= 3; ++epoch) sampler.sample(epoch);
  REQUIRE(sampler.samples().size() == 3);
  CHECK(sampler.samples()[2].index == 3);
  CHECK(sampler.samples()[2].seconds >= sampler.samples()[0].seconds);
  CHECK(sampler.samples()[1].process.uss > 0);
  CHECK(sampler.samples()[1].system.total > 0);
  CHECK(sampler.max_rss() >= sampler.samples()[0].process.rss);
  HostMemorySampler cheap;
  CHECK(cheap.sample(0).process.uss == -1);
}
