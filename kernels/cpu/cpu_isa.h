// Which instruction-set level the CPU kernels run at. The hot kernels are compiled once per
// level (kernels/cpu/isa_variant.h) and one copy is picked at run time from cpuid, as oneDNN
// does, so one binary is fast on an AVX-512 server and still runs on an AVX2 laptop.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::kernels::cpu {

// Ordered: each level includes everything below it.
//   baseline     x86-64-v2 (SSE4.2, POPCNT): what the whole library is compiled for
//   avx2         x86-64-v3: AVX2, FMA, F16C, BMI2
//   avx512       x86-64-v4: AVX-512 F, CD, BW, DQ, VL
//   avx512_bf16  avx512 plus AVX512_BF16 (vdpbf16ps) and AVX512_VNNI (vpdpbusd), as on
//                AMD Zen 4/5 and Intel Cooper Lake / Sapphire Rapids
enum class CpuIsa : int { baseline = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3 };

inline constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512,
                                         CpuIsa::avx512_bf16};

// The best level this CPU and its operating system support (cpuid, and xgetbv for the
// register state the OS saves). Read once.
CpuIsa detected_cpu_isa();

// The level kernels run at now: the detected one, or the one FRUGAL_CPU_ISA names (read at the
// first call), or the one set_cpu_isa chose last. Throws frugal::Error when FRUGAL_CPU_ISA
// names an unknown level or one this CPU lacks, so that a forced comparison never silently
// measures something else.
CpuIsa cpu_isa();

// Forces a level (tests run every variant in one process; benchmarks compare levels). Throws
// frugal::Error, changing nothing, for a level above detected_cpu_isa(). Not meant to be
// called while kernels run on other threads: a call in flight finishes at the level it began.
void set_cpu_isa(CpuIsa isa);

// Every level from baseline up to detected_cpu_isa(): the ones set_cpu_isa accepts (only
// baseline where the build carries one copy of the kernels).
std::vector<CpuIsa> supported_cpu_isas();

// "baseline", "avx2", "avx512", "avx512_bf16": the names FRUGAL_CPU_ISA takes.
const char* cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// Whether this build carries the per-level copies (x86-64 only; elsewhere every level runs the
// baseline copy and only baseline is supported).
bool cpu_isa_variants_built();

// One line for reports: "avx512_bf16 (detected avx512_bf16)", or "avx2 (forced by
// FRUGAL_CPU_ISA; detected avx512_bf16)".
std::string describe_cpu_isa();

}  // namespace frugal::kernels::cpu
