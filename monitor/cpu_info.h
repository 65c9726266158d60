// The CPU as a training job sees it: model, cores (all, and those this process may run on),
// and the vector units frugal's kernels use — what the CPU has, and what this build of
// frugal was compiled to use.
#pragma once

#include <string>
#include <string_view>

namespace frugal::monitor {

// Vector-unit features by their /proc/cpuinfo flag names.
struct VectorUnits {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512_bf16 = false, avx512_fp16 = false;
  bool amx_tile = false, amx_bf16 = false;
};

struct CpuInfo {
  std::string model;      // "model name" of /proc/cpuinfo
  int logical_cores = 0;  // online hardware threads
  int usable_cores = 0;   // this process's affinity mask (taskset, cgroup cpusets)
  VectorUnits cpu;        // what the processor has
  VectorUnits build;      // what the library as a whole was compiled for (-march)
  // The hot kernels' own level (kernels/cpu/cpu_isa.h): in the default build they carry one
  // copy per level and pick one from cpuid, so they may use more than `build` says.
  bool kernels_dispatch = false;     // per-level copies built (runtime dispatch)
  std::string kernels_level;         // the level they run at: "avx512_bf16"; "" on error
  bool kernels_level_error = false;  // FRUGAL_CPU_ISA names a level that cannot run here
  std::string kernels_best;          // the best level this build offers on this CPU
  std::string kernels_description;   // describe_cpu_isa(): how the level was chosen, or the error
};

CpuInfo cpu_info();
// The model and flags of the first processor in a /proc/cpuinfo text.
CpuInfo parse_cpuinfo(std::string_view cpuinfo);
// The vector units named in a space-separated flag list.
VectorUnits parse_cpu_flags(std::string_view flags);
// What the compiler targeted for this file (the project compiles everything alike).
VectorUnits compiled_vector_units();

}  // namespace frugal::monitor
