// The Catch2 main of the CUDA tests: where no GPU can be used (no device, no driver), each
// test exits with 77, which CTest reports as skipped, saying why. Listing the tests (for
// CTest's discovery at build time) works everywhere.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "allocator/cuda_device.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const auto& config = session.configData();
  const bool listing =
      config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters;
  if (!listing && !frugal::cuda::is_available()) {
    std::printf("skipped: %s\n", frugal::cuda::unavailable_reason().c_str());
    return 77;
  }
  return session.run();
}
