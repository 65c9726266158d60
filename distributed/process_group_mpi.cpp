// ProcessGroupMPI: MPI_Allreduce / MPI_Bcast / MPI_Barrier on CPU tensors, in place, with
// MPI's error codes turned into frugal::Error; and the default group of init_process_group.
#include "distributed/process_group.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "common/error.h"

namespace frugal::distributed {

namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(call) +
              " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// MPI_Finalize at exit, only when frugal was the one to call MPI_Init_thread.
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_mpi_initialized() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized) return;
  // Serialized: frugal calls MPI from one thread at a time (OpenMP kernels never call it).
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
}

void check_tensor(const Tensor& t, const char* call) {
  FRUGAL_CHECK(t.defined(), std::string(call) + ": the tensor is undefined");
  FRUGAL_CHECK(t.is_cpu(), std::string(call) + ": the MPI backend takes CPU tensors, got one on " +
                               t.device().str() + " (NCCL, for GPU tensors, is not built)");
  FRUGAL_CHECK(t.is_contiguous(),
               std::string(call) + ": the tensor must be contiguous (call .contiguous())");
}

int checked_count(std::size_t n, const char* call) {
  FRUGAL_CHECK(n <= static_cast<std::size_t>(INT_MAX),
               std::string(call) + ": " + std::to_string(n) + " elements exceed MPI's int count");
  return static_cast<int>(n);
}

std::unique_ptr<ProcessGroup>& default_slot() {
  static std::unique_ptr<ProcessGroup> group;
  return group;
}

}  // namespace

struct ProcessGroupMPI::Comm {
  MPI_Comm handle = MPI_COMM_NULL;
};

ProcessGroupMPI::ProcessGroupMPI() : comm_(std::make_unique<Comm>()) {
  ensure_mpi_initialized();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_->handle), "MPI_Comm_dup");
  // Errors come back as codes (then frugal::Error) instead of MPI's default abort.
  check_mpi(MPI_Comm_set_errhandler(comm_->handle, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_->handle, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_->handle, &size_), "MPI_Comm_size");
}

ProcessGroupMPI::~ProcessGroupMPI() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_->handle != MPI_COMM_NULL) MPI_Comm_free(&comm_->handle);
}

namespace {

// The element count of a tensor all_reduce accepts, and its MPI type.
int reducible(const Tensor& tensor, const char* call, MPI_Datatype* type) {
  check_tensor(tensor, "all_reduce");
  const ScalarType dtype = tensor.dtype();
  FRUGAL_CHECK(dtype == kFloat32 || dtype == kFloat64,
               std::string("all_reduce: the MPI backend reduces float32 or float64 tensors, got ") +
                   dtype_name(dtype));
  *type = dtype == kFloat32 ? MPI_FLOAT : MPI_DOUBLE;
  return checked_count(static_cast<std::size_t>(tensor.numel()), call);
}

// MPI has no mean; the sum is divided, as PyTorch's Gloo and MPI backends do.
void divide(Tensor& tensor, int ranks) {
  const std::int64_t n = tensor.numel();
  if (tensor.dtype() == kFloat32) {
    float* p = tensor.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i) p[i] /= static_cast<float>(ranks);
  } else {
    double* p = tensor.data_ptr<double>();
    for (std::int64_t i = 0; i < n; ++i) p[i] /= static_cast<double>(ranks);
  }
}

class WorkMPI : public Work {
 public:
  WorkMPI(Tensor tensor, ReduceOp op, int ranks, MPI_Request request)
      : tensor_(std::move(tensor)), op_(op), ranks_(ranks), request_(request) {}
  ~WorkMPI() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // Never leave a request pending behind the buffer's back (an exception unwound past wait).
    if (!finalized && request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait (all_reduce)");
    if (op_ == ReduceOp::AVG && ranks_ > 1) divide(tensor_, ranks_);
  }

 private:
  Tensor tensor_;
  ReduceOp op_;
  int ranks_;
  MPI_Request request_;
};

}  // namespace

void ProcessGroupMPI::all_reduce(Tensor& tensor, ReduceOp op) {
  MPI_Datatype type;
  const int count = reducible(tensor, "MPI_Allreduce", &type);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, tensor.data_ptr(), count, type, MPI_SUM, comm_->handle),
            "MPI_Allreduce");
  if (op == ReduceOp::AVG && size_ > 1) divide(tensor, size_);
}

std::unique_ptr<Work> ProcessGroupMPI::all_reduce_async(Tensor& tensor, ReduceOp op) {
  MPI_Datatype type;
  const int count = reducible(tensor, "MPI_Iallreduce", &type);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(), count, type, MPI_SUM, comm_->handle,
                           &request),
            "MPI_Iallreduce");
  return std::make_unique<WorkMPI>(tensor, op, size_, request);
}

void ProcessGroupMPI::broadcast(Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  FRUGAL_CHECK(root >= 0 && root < size_, "broadcast: root " + std::to_string(root) +
                                              " is not a rank of this group of " +
                                              std::to_string(size_));
  // Bytes, so that any dtype (int64 batch-norm counters too) travels unchanged.
  const int count = checked_count(tensor.nbytes(), "MPI_Bcast");
  check_mpi(MPI_Bcast(tensor.data_ptr(), count, MPI_BYTE, root, comm_->handle), "MPI_Bcast");
}

void ProcessGroupMPI::barrier() { check_mpi(MPI_Barrier(comm_->handle), "MPI_Barrier"); }

void init_process_group(const std::string& backend) {
  FRUGAL_CHECK(!default_slot(),
               "init_process_group: the default process group is already initialized");
  if (backend != "mpi")
    throw ConfigError("init_process_group: backend '" + backend +
                      "' is not available; this build has 'mpi' (CPU tensors)");
  default_slot() = std::make_unique<ProcessGroupMPI>();
}

bool is_initialized() { return default_slot() != nullptr; }

void destroy_process_group() { default_slot().reset(); }

ProcessGroup& default_group() {
  FRUGAL_CHECK(
      default_slot(),
      "the default process group is not initialized: call init_process_group(\"mpi\") first");
  return *default_slot();
}

int get_rank() { return default_group().rank(); }
int get_world_size() { return default_group().size(); }

}  // namespace frugal::distributed
