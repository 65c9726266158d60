// Process groups with torch.distributed's names: a ProcessGroup does collectives over the
// processes `mpirun` started; ProcessGroupMPI is its MPI backend for CPU tensors, and
// init_process_group("mpi") / get_rank() / get_world_size() manage the default group.
#pragma once

#include <memory>
#include <string>

#include "engine/tensor.h"

namespace frugal::distributed {

enum class ReduceOp { SUM, AVG };

// A collective in flight (torch.distributed's Work): wait() returns when its result is in the
// tensor it was given, which must stay alive and untouched until then.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;
  // In place on every rank: the element-wise sum (or mean) of `tensor` over all ranks.
  virtual void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM) = 0;
  // The same, started now and finished by the returned Work's wait(); every rank must start
  // its collectives in the same order.
  virtual std::unique_ptr<Work> all_reduce_async(Tensor& tensor, ReduceOp op = ReduceOp::SUM) = 0;
  // In place: every rank's `tensor` becomes root's.
  virtual void broadcast(Tensor& tensor, int root = 0) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
};

// Over MPI_COMM_WORLD (a duplicate, so frugal's messages never mix with the program's own).
// The first group initialises MPI (MPI_Init_thread, serialized calls) unless the program
// already did; MPI is finalised at exit if frugal initialised it. Tensors must be defined,
// contiguous and on the CPU; all_reduce takes float32 or float64, broadcast any dtype. Every
// failure, MPI's included (the communicator returns errors instead of aborting), is a
// frugal::Error naming the call.
class ProcessGroupMPI : public ProcessGroup {
 public:
  ProcessGroupMPI();
  ~ProcessGroupMPI() override;
  ProcessGroupMPI(const ProcessGroupMPI&) = delete;
  ProcessGroupMPI& operator=(const ProcessGroupMPI&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM) override;
  // MPI_Iallreduce; wait() is MPI_Wait (and the division, for AVG).
  std::unique_ptr<Work> all_reduce_async(Tensor& tensor, ReduceOp op = ReduceOp::SUM) override;
  void broadcast(Tensor& tensor, int root = 0) override;
  void barrier() override;

 private:
  struct Comm;
  std::unique_ptr<Comm> comm_;
  int rank_ = 0, size_ = 1;
};

// The default group, as torch.distributed: backend "mpi" is the only one built here (NCCL is
// not); anything else, or a second call, is a frugal::Error.
void init_process_group(const std::string& backend = "mpi");
bool is_initialized();
void destroy_process_group();
// The default group; a frugal::Error before init_process_group.
ProcessGroup& default_group();
int get_rank();
int get_world_size();

}  // namespace frugal::distributed
