// Runtime detection of the CPU's instruction-set level from cpuid and xgetbv, and the
// FRUGAL_CPU_ISA / set_cpu_isa override that the per-level kernel dispatch reads.
#include "kernels/cpu/cpu_isa.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <iterator>

#include "common/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define FRUGAL_CPU_X86_64 1
#endif

namespace frugal::kernels::cpu {

namespace {

#if FRUGAL_CPU_X86_64
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return Regs{};
  return r;
}

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// The register state the operating system saves on a context switch (XCR0). A CPU may have
// AVX-512 while the OS does not enable it; then using zmm registers faults.
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuIsa detect() {
  const Regs l1 = cpuid(1, 0);
  const bool v2 = bit(l1.c, 20) && bit(l1.c, 23);  // SSE4.2, POPCNT (the build's floor)
  if (!v2) return CpuIsa::baseline;
  const bool osxsave = bit(l1.c, 27);
  if (!osxsave) return CpuIsa::baseline;
  const unsigned long long state = xcr0();
  const bool os_avx = (state & 0x6) == 0x6;       // xmm and ymm
  const bool os_avx512 = (state & 0xe6) == 0xe6;  // plus opmask, zmm0-15 upper, zmm16-31
  const Regs l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  const bool avx2 = os_avx && bit(l1.c, 28) /*AVX*/ && bit(l1.c, 12) /*FMA*/ &&
                    bit(l1.c, 29) /*F16C*/ && bit(l7.b, 5) /*AVX2*/ && bit(l7.b, 3) /*BMI1*/ &&
                    bit(l7.b, 8) /*BMI2*/;
  if (!avx2) return CpuIsa::baseline;
  const bool avx512 = os_avx512 && bit(l7.b, 16) /*F*/ && bit(l7.b, 17) /*DQ*/ &&
                      bit(l7.b, 28) /*CD*/ && bit(l7.b, 30) /*BW*/ && bit(l7.b, 31) /*VL*/;
  if (!avx512) return CpuIsa::avx2;
  const bool bf16 = bit(l7s1.a, 5) /*AVX512_BF16*/ && bit(l7.c, 11) /*AVX512_VNNI*/;
  return bf16 ? CpuIsa::avx512_bf16 : CpuIsa::avx512;
}
#else
CpuIsa detect() { return CpuIsa::baseline; }
#endif

// The highest level set_cpu_isa accepts: what cpuid found, where this build has the copies.
CpuIsa best_supported() { return cpu_isa_variants_built() ? detected_cpu_isa() : CpuIsa::baseline; }

// -1: no set_cpu_isa call yet.
std::atomic<int> set_level{-1};

struct EnvChoice {
  std::optional<CpuIsa> level;
  std::string error;  // non-empty when FRUGAL_CPU_ISA cannot be honoured
};

std::string supported_names() {
  if (!cpu_isa_variants_built())
    return "only baseline: this build has one copy of each kernel (FRUGAL_NATIVE, or not x86-64)";
  std::string names;
  for (CpuIsa isa : supported_cpu_isas())
    names += std::string(names.empty() ? "" : ", ") + cpu_isa_name(isa);
  return names + " (detected " + cpu_isa_name(detected_cpu_isa()) + ")";
}

EnvChoice read_env() {
  const char* value = std::getenv("FRUGAL_CPU_ISA");
  if (value == nullptr || *value == '\0') return {};
  const std::optional<CpuIsa> level = parse_cpu_isa(value);
  if (!level)
    return {std::nullopt, std::string("FRUGAL_CPU_ISA=") + value +
                              " is not a level; use baseline, avx2, avx512 or avx512_bf16"};
  if (*level > best_supported())
    return {std::nullopt,
            std::string("FRUGAL_CPU_ISA=") + value + ": this CPU supports " + supported_names()};
  return {level, ""};
}

const EnvChoice& env_choice() {
  static const EnvChoice choice = read_env();
  return choice;
}

}  // namespace

CpuIsa detected_cpu_isa() {
  static const CpuIsa level = detect();
  return level;
}

CpuIsa cpu_isa() {
  const int chosen = set_level.load(std::memory_order_relaxed);
  if (chosen >= 0) return static_cast<CpuIsa>(chosen);
  const EnvChoice& env = env_choice();
  FRUGAL_CHECK(env.error.empty(), env.error);
  return env.level ? *env.level : best_supported();
}

void set_cpu_isa(CpuIsa isa) {
  FRUGAL_CHECK(isa <= best_supported(), std::string("set_cpu_isa(") + cpu_isa_name(isa) +
                                            "): this CPU supports " + supported_names());
  set_level.store(static_cast<int>(isa), std::memory_order_relaxed);
}

std::vector<CpuIsa> supported_cpu_isas() {
  std::vector<CpuIsa> levels;
  for (CpuIsa isa : kAllCpuIsas)
    if (isa <= best_supported()) levels.push_back(isa);
  return levels;
}

const char* cpu_isa_name(CpuIsa isa) {
  constexpr const char* kNames[] = {"baseline", "avx2", "avx512", "avx512_bf16"};  // CpuIsa order
  const auto i = static_cast<std::size_t>(isa);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  for (CpuIsa isa : kAllCpuIsas)
    if (name == cpu_isa_name(isa)) return isa;
  return std::nullopt;
}

bool cpu_isa_variants_built() {
#if FRUGAL_CPU_X86_64 && FRUGAL_CPU_VARIANTS
  return true;
#else
  return false;
#endif
}

std::string describe_cpu_isa() {
  const std::string detected = cpu_isa_name(detected_cpu_isa());
  const EnvChoice& env = env_choice();
  // A FRUGAL_CPU_ISA that names no level is an error in every build, the native one included.
  if (!env.error.empty() && set_level.load(std::memory_order_relaxed) < 0)
    return "error: " + env.error;
  if (!cpu_isa_variants_built())
    return std::string("one copy of each kernel, compiled for the build machine (") +
           FRUGAL_CPU_BUILD_TARGET + "); this CPU: " + detected;
  if (set_level.load(std::memory_order_relaxed) >= 0)
    return std::string(cpu_isa_name(cpu_isa())) + " (set by set_cpu_isa; detected " + detected +
           ")";
  if (env.level)
    return std::string(cpu_isa_name(*env.level)) + " (forced by FRUGAL_CPU_ISA; detected " +
           detected + ")";
  return detected + " (detected)";
}

}  // namespace frugal::kernels::cpu
