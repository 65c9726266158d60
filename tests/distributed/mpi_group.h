// The distributed tests run as `mpirun -np 2 distributed_tests`: every rank runs every test in
// the same order, so each collective in a test meets its partner on the other rank.
#pragma once

#include "distributed/process_group.h"

namespace frugal::test {

inline distributed::ProcessGroup& world() {
  if (!distributed::is_initialized()) distributed::init_process_group("mpi");
  return distributed::default_group();
}

}  // namespace frugal::test
