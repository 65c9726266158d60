// frugal-doctor: the machine as a training job sees it — RAM, swap, container and memlock
// limits, CPU cores and vector units, CUDA devices and their free memory, the allocator's
// configuration — with advice where something will hurt. --json for scripts.
#include <fstream>
#include <iostream>

#include "common/cli.h"
#include "common/error.h"
#include "monitor/machine_report.h"

using namespace frugal;

namespace {

int run(int argc, char** argv) {
  CommandLine cli(
      "frugal-doctor",
      "Reports the machine as a frugal training job sees it: RAM total and available, swap,\n"
      "the container's memory limit, RLIMIT_MEMLOCK (which caps pinned memory without CUDA),\n"
      "transparent huge pages, the CPU model, cores and vector units (and those this build\n"
      "uses), CUDA devices with their free memory, and FRUGAL_ALLOC_CONF as parsed; then\n"
      "advice where something will hurt training. Takes no memory on any device beyond\n"
      "the CUDA context that asking a device for its free memory creates.");
  cli.flag("json", "print the report as JSON");
  cli.option("metrics-json", "FILE", "also write the report as JSON to FILE");
  if (!cli.parse(argc, argv)) return 0;

  const monitor::MachineReport report = monitor::collect_machine_report();
  const std::vector<monitor::Advice> advice = monitor::advise(report);
  const std::string json = monitor::report_json(report, advice);
  if (cli.has("metrics-json")) {
    std::ofstream out(cli.get("metrics-json"));
    out << json << "\n";
    FRUGAL_CHECK(out.good(), "frugal-doctor: cannot write '" + cli.get("metrics-json") + "'");
  }
  if (cli.has("json"))
    std::cout << json << "\n";
  else
    std::cout << monitor::report_text(report, advice);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, run); }
