// CPU model, cores and vector units from /proc/cpuinfo, sysconf and the affinity mask.
#include "monitor/cpu_info.h"

#include <sched.h>
#include <unistd.h>

#include <set>
#include <string>

#include "common/error.h"
#include "kernels/cpu/cpu_isa.h"
#include "monitor/proc_files.h"

namespace frugal::monitor {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The value of the first "key : value" line, or "".
std::string_view cpuinfo_value(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == key)
      return trim(line.substr(colon + 1));
  }
  return {};
}

}  // namespace

VectorUnits parse_cpu_flags(std::string_view flags) {
  std::set<std::string_view> present;
  std::size_t at = 0;
  while (at < flags.size()) {
    const std::size_t end = std::min(flags.find(' ', at), flags.size());
    if (end > at) present.insert(flags.substr(at, end - at));
    at = end + 1;
  }
  auto has = [&](std::string_view f) { return present.count(f) > 0; };
  VectorUnits v;
  v.avx2 = has("avx2");
  v.fma = has("fma");
  v.f16c = has("f16c");
  v.avx512f = has("avx512f");
  v.avx512bw = has("avx512bw");
  v.avx512_bf16 = has("avx512_bf16");
  v.avx512_fp16 = has("avx512_fp16");
  v.amx_tile = has("amx_tile");
  v.amx_bf16 = has("amx_bf16");
  return v;
}

CpuInfo parse_cpuinfo(std::string_view cpuinfo) {
  CpuInfo info;
  info.model = std::string(cpuinfo_value(cpuinfo, "model name"));
  if (info.model.empty())
    info.model = std::string(cpuinfo_value(cpuinfo, "Model"));  // arm64 spelling
  info.cpu = parse_cpu_flags(cpuinfo_value(cpuinfo, "flags"));
  return info;
}

VectorUnits compiled_vector_units() {
  VectorUnits v;
#ifdef __AVX2__
  v.avx2 = true;
#endif
#ifdef __FMA__
  v.fma = true;
#endif
#ifdef __F16C__
  v.f16c = true;
#endif
#ifdef __AVX512F__
  v.avx512f = true;
#endif
#ifdef __AVX512BW__
  v.avx512bw = true;
#endif
#ifdef __AVX512BF16__
  v.avx512_bf16 = true;
#endif
#ifdef __AVX512FP16__
  v.avx512_fp16 = true;
#endif
#ifdef __AMX_TILE__
  v.amx_tile = true;
#endif
#ifdef __AMX_BF16__
  v.amx_bf16 = true;
#endif
  return v;
}

CpuInfo cpu_info() {
  const auto text = read_text_file("/proc/cpuinfo");
  CpuInfo info = text ? parse_cpuinfo(*text) : CpuInfo{};
  if (info.model.empty()) info.model = "unknown";
  info.logical_cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  info.usable_cores =
      ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : info.logical_cores;
  info.build = compiled_vector_units();
  namespace isa = kernels::cpu;
  info.kernels_dispatch = isa::cpu_isa_variants_built();
  info.kernels_best = isa::cpu_isa_name(isa::supported_cpu_isas().back());
  info.kernels_description = isa::describe_cpu_isa();
  try {
    info.kernels_level = isa::cpu_isa_name(isa::cpu_isa());
  } catch (const Error&) {
    info.kernels_level.clear();  // FRUGAL_CPU_ISA names a level this CPU cannot run
    info.kernels_level_error = true;
  }
  return info;
}

}  // namespace frugal::monitor
