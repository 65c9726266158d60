// The one Catch2 main shared by every test executable. Under FRUGAL_CPU_ISA=<level> (how CTest
// runs the kernel suites once per instruction-set level) a level this CPU lacks is reported
// as skipped (exit 77) rather than failing every case.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>

#include "common/error.h"
#include "kernels/cpu/cpu_isa.h"

int main(int argc, char* argv[]) {
  if (const char* level = std::getenv("FRUGAL_CPU_ISA"); level != nullptr && *level != '\0') {
    try {
      frugal::kernels::cpu::cpu_isa();
    } catch (const frugal::Error& e) {
      std::cout << "skipped: " << e.what() << "\n";
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
