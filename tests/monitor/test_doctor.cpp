// frugal-doctor run as a program: its --json parses and holds the machine's figures, the
// advice, and FRUGAL_ALLOC_CONF as set; a malformed setting is reported, not a crash.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "json_value.h"
#include "kernels/cpu/cpu_isa.h"
#include "monitor/host_memory.h"

using frugal::test::JsonValue;
using frugal::test::parse_json;

namespace {

struct Run {
  int exit_code;
  std::string output;
};

Run run(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

const std::string doctor = FRUGAL_DOCTOR_PATH;

}  // namespace

TEST_CASE("frugal-doctor --json reports the machine", "[monitor][doctor]") {
  const Run r = run("env -u FRUGAL_ALLOC_CONF -u FRUGAL_CPU_ISA '" + doctor + "' --json");
  REQUIRE(r.exit_code == 0);
  const JsonValue j = parse_json(r.output);
  const auto system = frugal::monitor::system_memory();
  CHECK(j["memory"]["total_bytes"].number == static_cast<double>(system.total));
  CHECK(j["memory"]["available_bytes"].number > 0);
  CHECK(j["memory"]["available_bytes"].number <= j["memory"]["total_bytes"].number);
  CHECK(j["memory"]["swap_total_bytes"].number >= 0);
  CHECK(j["memory"]["memlock_soft_bytes"].kind == JsonValue::Kind::Number);
  CHECK(j["cpu"]["logical_cores"].number >= 1);
  CHECK(j["cpu"]["usable_cores"].number >= 1);
  CHECK_FALSE(j["cpu"]["model"].string.empty());
  for (const char* unit : {"avx2", "avx512f", "avx512_bf16", "amx_tile", "f16c"}) {
    CHECK(j["cpu"]["vector_units"][unit].kind == JsonValue::Kind::Bool);
    CHECK(j["cpu"]["build_uses"][unit].kind == JsonValue::Kind::Bool);
  }
  // The kernels' level: what this process would run, the best of this build here, as named.
  CHECK(j["cpu"]["kernels_dispatch"].boolean == frugal::kernels::cpu::cpu_isa_variants_built());
  CHECK(j["cpu"]["cpu_isa"].string ==
        frugal::kernels::cpu::cpu_isa_name(frugal::kernels::cpu::supported_cpu_isas().back()));
  CHECK(j["cpu"]["cpu_isa_best"].string == j["cpu"]["cpu_isa"].string);
  const JsonValue& cuda = j["cuda"];
  CHECK(cuda["available"].boolean == !cuda["devices"].array.empty());
  if (!cuda["available"].boolean) CHECK_FALSE(cuda["reason"].string.empty());
  for (const JsonValue& d : cuda["devices"].array)
    CHECK(d["free_bytes"].number <= d["total_bytes"].number);
  CHECK(j["allocator"]["env_set"].boolean == false);
  CHECK(j["allocator"]["parsed"].string == "expandable_segments:True");
  CHECK(j["allocator"]["error"].string.empty());
  for (const JsonValue& a : j["advice"].array) {
    const std::string level = a["level"].string;
    CHECK((level == "note" || level == "warning" || level == "error"));
    CHECK_FALSE(a["text"].string.empty());
  }
}

TEST_CASE("frugal-doctor names a forced kernel level, and an impossible one as an error",
          "[monitor][doctor]") {
  const Run forced = run("FRUGAL_CPU_ISA=baseline '" + doctor + "' --json");
  REQUIRE(forced.exit_code == 0);
  const JsonValue f = parse_json(forced.output);
  CHECK(f["cpu"]["cpu_isa"].string == "baseline");
  if (frugal::kernels::cpu::cpu_isa_variants_built())
    CHECK_THAT(f["cpu"]["cpu_isa_description"].string, Catch::Contains("forced by FRUGAL_CPU_ISA"));

  const Run bad = run("FRUGAL_CPU_ISA=avx3 '" + doctor + "' --json");
  const JsonValue b = parse_json(bad.output);
  CHECK(b["cpu"]["cpu_isa"].string.empty());
  CHECK_THAT(b["cpu"]["cpu_isa_description"].string,
             Catch::Contains("FRUGAL_CPU_ISA=avx3 is not a level"));
  bool named = false;
  for (const JsonValue& a : b["advice"].array)
    named = named || (a["level"].string == "error" &&
                      a["text"].string.find("FRUGAL_CPU_ISA=avx3") != std::string::npos);
  CHECK(named);
}

TEST_CASE("frugal-doctor shows FRUGAL_ALLOC_CONF as parsed, and a bad one as an error",
          "[monitor][doctor]") {
  const Run good = run("FRUGAL_ALLOC_CONF=max_split_size_mb:64,garbage_collection_threshold:0.6 '" +
                       doctor + "' --json");
  REQUIRE(good.exit_code == 0);
  const JsonValue g = parse_json(good.output);
  CHECK(g["allocator"]["env_set"].boolean);
  CHECK(g["allocator"]["env"].string == "max_split_size_mb:64,garbage_collection_threshold:0.6");
  CHECK_THAT(g["allocator"]["parsed"].string, Catch::Contains("max_split_size_mb:64"));

  const Run bad = run("FRUGAL_ALLOC_CONF=no_such_key:1 '" + doctor + "' --json");
  REQUIRE(bad.exit_code == 0);  // the doctor reports it; it does not fail on it
  const JsonValue b = parse_json(bad.output);
  CHECK_THAT(b["allocator"]["error"].string, Catch::Contains("no_such_key"));
  bool reported = false;
  for (const JsonValue& a : b["advice"].array)
    reported |= a["level"].string == "error" && a["topic"].string == "allocator";
  CHECK(reported);
}

TEST_CASE("frugal-doctor sees a lowered memlock limit and warns where pinned memory is mlock'd",
          "[monitor][doctor]") {
  // Lowering a soft limit needs no privilege (32 KiB: below any usual hard limit); the shell
  // passes it on to the doctor.
  const Run r = run("ulimit -S -l 32 && '" + doctor + "' --json");
  REQUIRE(r.exit_code == 0);
  const JsonValue j = parse_json(r.output);
  CHECK(j["memory"]["memlock_soft_bytes"].number == 32.0 * 1024.0);
  bool warned = false, noted = false;
  for (const JsonValue& a : j["advice"].array) {
    if (a["topic"].string != "memlock") continue;
    warned |= a["level"].string == "warning";
    noted |= a["level"].string == "note";
  }
  // Without a CUDA device pinned memory is mlock'd, which the limit caps: a warning. With one
  // it comes from cudaHostAlloc, which the limit does not cap: a note.
  if (j["cuda"]["available"].boolean)
    CHECK(noted);
  else
    CHECK(warned);
}

TEST_CASE("frugal-doctor prints its text report and --help, and refuses unknown options",
          "[monitor][doctor]") {
  const Run text = run("'" + doctor + "'");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.output, Catch::Contains("RAM available") && Catch::Contains("vector units") &&
                              Catch::Contains("FRUGAL_ALLOC_CONF") && Catch::Contains("advice"));
  const Run help = run("'" + doctor + "' --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("--json"));
  CHECK(run("'" + doctor + "' --no-such-option 2>/dev/null").exit_code == 2);
}
