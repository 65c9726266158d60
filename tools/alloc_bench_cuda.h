// frugal-alloc-bench's CUDA subjects, included by alloc_bench.cpp in a CUDA build: the
// caching allocator over a real device, and the two things it replaces there — plain
// cudaMalloc/cudaFree, and CUDA's own stream-ordered pool (cudaMallocAsync/cudaFreeAsync,
// its release threshold raised so that it keeps its memory, as a user of it would set).
// Each benchmark thread gets its own non-blocking stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "allocator/cuda_backend.h"
#include "common/cuda_check.h"

namespace frugal::tools {

class CudaStreams {
 public:
  explicit CudaStreams(int n) : streams_(static_cast<std::size_t>(n)) {
    for (cudaStream_t& s : streams_)
      FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  ~CudaStreams() {
    for (cudaStream_t s : streams_) (void)cudaStreamDestroy(s);
  }
  CudaStreams(const CudaStreams&) = delete;
  CudaStreams& operator=(const CudaStreams&) = delete;
  // The stream of benchmark thread `thread`.
  cudaStream_t operator[](alloc::StreamId thread) const { return streams_[thread]; }
  int size() const { return static_cast<int>(streams_.size()); }

 private:
  std::vector<cudaStream_t> streams_;
};

class CudaCachingSubject {
 public:
  explicit CudaCachingSubject(int threads)
      : streams_(threads), allocator_(std::make_shared<alloc::CudaBackend>(0)) {}
  Handle allocate(std::size_t bytes, alloc::StreamId thread) {
    const alloc::Allocation a =
        allocator_.allocate(bytes, reinterpret_cast<alloc::StreamId>(streams_[thread]));
    return {a.ptr, a.block, a.size};
  }
  void free(const Handle& h) { allocator_.free(alloc::Allocation{h.ptr, h.block, h.size}); }
  bool host_memory() const { return false; }

 private:
  CudaStreams streams_;
  alloc::CachingAllocator allocator_;
};

class CudaMallocSubject {
 public:
  Handle allocate(std::size_t bytes, alloc::StreamId) {
    void* p = nullptr;
    FRUGAL_CUDA_CHECK(cudaMalloc(&p, bytes));
    return {p, nullptr, bytes};
  }
  void free(const Handle& h) { FRUGAL_CUDA_CHECK(cudaFree(h.ptr)); }
  bool host_memory() const { return false; }
  // What CUDA guarantees for any allocation; held to frugal's 512 bytes, a 256-aligned block
  // would count as a check failure and fail the run.
  std::size_t alignment() const { return 256; }
};

class CudaMallocAsyncSubject {
 public:
  // Whether device 0 has stream-ordered memory pools at all (some virtualised GPUs do not).
  static bool supported() {
    int pools = 0;
    FRUGAL_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
    return pools != 0;
  }
  explicit CudaMallocAsyncSubject(int threads) : streams_(threads) {
    FRUGAL_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, 0));
    FRUGAL_CUDA_CHECK(
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold_before_));
    std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
    FRUGAL_CUDA_CHECK(
        cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  }
  // The default pool is the process's: once the frees queued on the streams have run, its
  // memory goes back to the device and its threshold to what it was, so the subjects
  // measured after this one (the N-thread runs) find the device as this one found it.
  ~CudaMallocAsyncSubject() {
    for (int t = 0; t < streams_.size(); ++t) (void)cudaStreamSynchronize(streams_[t]);
    (void)cudaMemPoolTrimTo(pool_, 0);
    (void)cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold_before_);
  }
  CudaMallocAsyncSubject(const CudaMallocAsyncSubject&) = delete;
  CudaMallocAsyncSubject& operator=(const CudaMallocAsyncSubject&) = delete;
  Handle allocate(std::size_t bytes, alloc::StreamId thread) {
    void* p = nullptr;
    FRUGAL_CUDA_CHECK(cudaMallocAsync(&p, bytes, streams_[thread]));
    // The stream travels in the handle's block field, unused by this subject.
    return {p, reinterpret_cast<alloc::Block*>(thread), bytes};
  }
  void free(const Handle& h) {
    FRUGAL_CUDA_CHECK(cudaFreeAsync(h.ptr, streams_[reinterpret_cast<alloc::StreamId>(h.block)]));
  }
  bool host_memory() const { return false; }
  std::size_t alignment() const { return 256; }  // CUDA's guarantee, as for cudaMalloc

 private:
  CudaStreams streams_;
  cudaMemPool_t pool_ = nullptr;
  std::uint64_t threshold_before_ = 0;
};

}  // namespace frugal::tools
