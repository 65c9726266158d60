// frugal-alloc-bench: how fast a warm malloc+free pair is — through frugal's caching
// allocator (also with its memory history recording), through the plain backend it
// replaces (aligned malloc/free), over a simulated device whose every allocation costs as
// much as cudaMalloc, and, on a machine with a GPU, over CUDA against cudaMalloc/cudaFree
// and cudaMallocAsync — with random log-uniform sizes from 512 B to 64 MiB, among live
// blocks freed and replaced at random, on 1 and N threads (each its own stream). Every
// block is checked: alignment, no overlap with any live block, and on host memory a
// pattern written after allocation must be intact when the block is freed.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "allocator/caching_allocator.h"
#include "allocator/host_backend.h"
#include "allocator/simulated_device.h"
#include "common/cli.h"
#include "common/json_writer.h"
#include "common/progress.h"
#include "tools/alloc_bench_measure.h"
#include "tools/alloc_bench_subjects.h"
#include "tools/cycle_timer.h"

using namespace frugal;
using namespace frugal::alloc;
using namespace frugal::tools;  // the subjects and the measurement

#if FRUGAL_WITH_CUDA
#include "allocator/cuda_device.h"
#include "tools/alloc_bench_cuda.h"
#endif

namespace {

int run(int argc, char** argv) {
  CommandLine cli("frugal-alloc-bench",
                  "Times warm malloc+free pairs (random sizes 512 B - 64 MiB, log-uniform, random\n"
                  "frees) through frugal's caching allocator and the backends it replaces, on 1\n"
                  "and N threads, checking every block on the way.");
  cli.option("threads", "N", "threads for the multi-threaded runs (each on its own stream)",
             std::to_string(std::max(2u, std::thread::hardware_concurrency())));
  cli.option("pairs", "N", "measured malloc+free pairs per thread", "100000");
  cli.option("warmup", "N", "unmeasured pairs per thread first", "20000");
  cli.option("live", "N", "live blocks per thread", "64");
  cli.option("device-call-us", "US", "simulated cost of one cudaMalloc/cudaFree call", "20");
  cli.option("seed", "N", "random seed", "1");
  cli.option("only", "TEXT", "run only the allocators whose name contains TEXT");
  cli.option("history", "N", "events kept by the memory history of the \"history on\" run",
             "65536");
  cli.flag("json", "print the results as JSON");
  cli.option("metrics-json", "FILE", "also write the results as JSON to FILE");
  if (!cli.parse(argc, argv)) return 0;

  Workload w;
  w.pairs = static_cast<std::size_t>(cli.get_int("pairs"));
  w.warmup = static_cast<std::size_t>(cli.get_int("warmup"));
  w.live = static_cast<std::size_t>(cli.get_int("live"));
  w.seed = static_cast<std::uint32_t>(cli.get_int("seed"));
  const int threads = static_cast<int>(cli.get_int("threads"));
  const double call_us = cli.get_double("device-call-us");
  if (threads < 1 || w.live < 1 || w.pairs < 1 || call_us < 0) {
    throw ConfigError(
        "frugal-alloc-bench: --threads, --live and --pairs must be >= 1, "
        "--device-call-us >= 0");
  }

  const tools::CycleTimer timer;
  Failures failures;
  std::vector<Result> results;
  const auto call_ns = static_cast<std::uint64_t>(call_us * 1000);
  char cost[32];
  std::snprintf(cost, sizeof cost, "%g us/call", call_us);
  const std::string only = cli.get("only");
  auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  const std::string caching_host = "caching, host memory", plain_host = "aligned_alloc/free";
  const std::string caching_history = "caching, host memory, history on";
  const auto history_events = static_cast<std::size_t>(cli.get_int("history"));
  if (history_events < 1) throw ConfigError("frugal-alloc-bench: --history must be >= 1");
  const std::string caching_device = std::string("caching, device ") + cost;
  const std::string plain_device = std::string("device calls ") + cost;
  for (int n : {1, threads}) {
    if (wanted(caching_host)) {
      CachingSubject s(std::make_shared<HostBackend>(), true);
      results.push_back(measure(caching_host, s, n, w, timer, failures));
    }
    if (wanted(caching_history)) {
      // The same run with the memory history recording: two events per pair.
      CachingSubject s(std::make_shared<HostBackend>(), true, history_events);
      results.push_back(measure(caching_history, s, n, w, timer, failures));
    }
    if (wanted(plain_host)) {
      AlignedMallocSubject s;
      results.push_back(measure(plain_host, s, n, w, timer, failures));
    }
    if (wanted(caching_device)) {
      auto device = std::make_shared<SimulatedDevice>(std::size_t{1} << 40);
      device->set_call_cost_ns(call_ns);
      CachingSubject s(device, false);
      results.push_back(measure(caching_device, s, n, w, timer, failures));
    }
    if (wanted(plain_device)) {
      auto device = std::make_shared<SimulatedDevice>(std::size_t{1} << 40);
      device->set_call_cost_ns(call_ns);
      DeviceCallSubject s(device);
      Workload fewer = w;  // every pair pays two device calls
      fewer.pairs = std::min<std::size_t>(w.pairs, 20000);
      fewer.warmup = std::min<std::size_t>(w.warmup, 2000);
      results.push_back(measure(plain_device, s, n, fewer, timer, failures));
    }
#if FRUGAL_WITH_CUDA
    if (cuda::is_available()) {
      const std::string caching_cuda = "caching, cuda:0", cuda_malloc = "cudaMalloc/cudaFree";
      const std::string cuda_async = "cudaMallocAsync/cudaFreeAsync";
      Workload fewer = w;  // cudaMalloc and cudaFree take microseconds each
      fewer.pairs = std::min<std::size_t>(w.pairs, 20000);
      fewer.warmup = std::min<std::size_t>(w.warmup, 2000);
      if (wanted(caching_cuda)) {
        tools::CudaCachingSubject s(n);
        results.push_back(measure(caching_cuda, s, n, w, timer, failures));
      }
      if (wanted(cuda_malloc)) {
        tools::CudaMallocSubject s;
        results.push_back(measure(cuda_malloc, s, n, fewer, timer, failures));
      }
      if (wanted(cuda_async) && !tools::CudaMallocAsyncSubject::supported()) {
        std::fprintf(stderr,
                     "frugal-alloc-bench: cuda:0 has no stream-ordered memory pools; %s left out\n",
                     cuda_async.c_str());
      } else if (wanted(cuda_async)) {
        tools::CudaMallocAsyncSubject s(n);
        results.push_back(measure(cuda_async, s, n, w, timer, failures));
      }
    }
#endif
    if (threads == 1) break;
  }

  std::string array = "[";
  for (std::size_t i = 0; i < results.size(); ++i) {
    JsonWriter j;
    j.field("subject", results[i].subject);
    j.field("threads", static_cast<std::int64_t>(results[i].threads));
    j.field("pairs", static_cast<std::int64_t>(results[i].pairs));
    j.field("median_ns", results[i].median_ns);
    j.field("p99_ns", results[i].p99_ns);
    j.field("back_to_back_median_ns", results[i].run_median_ns);
    j.field("back_to_back_p99_ns", results[i].run_p99_ns);
    j.field("replace_median_ns", results[i].replace_median_ns);
    j.field("replace_p99_ns", results[i].replace_p99_ns);
    j.field("pairs_per_second", results[i].pairs_per_second);
    array += (i ? ", " : "") + j.str();
  }
  array += "]";
  JsonWriter json;
  json.field("sizes", "512 B - 64 MiB log-uniform");
  json.field("live_blocks_per_thread", static_cast<std::int64_t>(w.live));
  json.field("timer_overhead_ns", timer.overhead_ns());
  json.field("check_failures", static_cast<std::int64_t>(failures.total()));
  json.raw("results", array);
  if (cli.has("metrics-json")) json.write_file(cli.get("metrics-json"));
  if (cli.has("json")) {
    std::cout << json.str() << "\n";
  } else {
    std::printf("%-34s %7s | %-22s | %-22s | %-22s\n", "", "", "pairs back to back",
                "a pair on its own", "free random + malloc");
    std::printf("%-34s %7s | %10s %11s | %10s %11s | %10s %11s\n", "allocator", "threads",
                "median ns", "p99 ns", "median ns", "p99 ns", "median ns", "p99 ns");
    for (const Result& r : results) {
      std::printf("%-34s %7d | %10.1f %11.1f | %10.1f %11.1f | %10.1f %11.1f\n", r.subject.c_str(),
                  r.threads, r.run_median_ns, r.run_p99_ns, r.median_ns, r.p99_ns,
                  r.replace_median_ns, r.replace_p99_ns);
    }
    std::printf("checks: %llu misaligned, %llu overlapping, %llu corrupted blocks\n",
                static_cast<unsigned long long>(failures.misaligned.load()),
                static_cast<unsigned long long>(failures.overlapping.load()),
                static_cast<unsigned long long>(failures.corrupted.load()));
  }
  return failures.total() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
