// kernels/cuda/stream.h on a real device: ops under a StreamGuard run on its stream (held back by
// a gate to prove it), memset_bytes on the current stream, stream_wait_stream ordering two
// streams, and the per-device copy stream that must not serialise with the default stream.
#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/cuda_check.h"
#include "engine/frugal.h"
#include "kernels/cuda/stream.h"
#include "tests/cuda/device_buffer.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
namespace kc = frugal::kernels::cuda;
using frugal::test::DeviceBuffer;
using frugal::test::kGpu;

namespace {

// A stream of its own that does not synchronise with the legacy default stream.
class OwnStream {
 public:
  OwnStream() { FRUGAL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~OwnStream() { (void)cudaStreamDestroy(stream_); }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  cudaStream_t get() const { return stream_; }
  kc::StreamId id() const { return reinterpret_cast<kc::StreamId>(stream_); }

 private:
  cudaStream_t stream_ = nullptr;
};

// Holds a stream at a host callback until release(), or destruction, so that a failed check
// cannot leave the stream blocked for the tests after it; the destructor waits for the callback
// to have let go of the gate before the gate's memory goes.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    FRUGAL_CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::wait, this));
  }
  ~StreamGate() {
    release();
    while (!done_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() { open_.store(true); }

 private:
  static void wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    while (!gate->open_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gate->done_.store(true);
  }
  std::atomic<bool> open_{false}, done_{false};
};

bool idle(cudaStream_t s) { return cudaStreamQuery(s) == cudaSuccess; }

}  // namespace

TEST_CASE(
    "cuda streams: ops under a StreamGuard run on its stream, and the copy back waits for them",
    "[cuda][stream]") {
  const Tensor x = randn({1000});
  const Tensor gx = x.cuda();  // a blocking copy: complete on return
  OwnStream s;
  CHECK(kc::current_stream() == 0);  // the legacy default stream until set
  Tensor y;
  {
    kc::StreamGuard guard(s.id());
    CHECK(kc::current_stream() == s.id());
    // Once before the gate, so the blocks the multiply needs are cached for stream s: no
    // cudaMalloc while the stream is held.
    (void)mul(gx, 3.0);
    StreamGate gate(s.get());
    y = mul(gx, 3.0);  // queued behind the gate
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(idle(s.get()));  // the multiply waits on s, not on the default stream
    gate.release();
    CHECK(frugal::test::bitwise_equal(y.cpu(), mul(x, 3.0)));  // copied on s, after the multiply
  }
  CHECK(kc::current_stream() == 0);  // the guard put the default stream back
  CHECK(idle(s.get()));
}

TEST_CASE("cuda streams: memset_bytes writes on the current stream", "[cuda][stream]") {
  OwnStream s;
  kc::StreamGuard guard(s.id());
  DeviceBuffer<std::uint8_t> buffer(std::vector<std::uint8_t>(4099, 7));
  {
    StreamGate gate(s.get());
    kc::memset_bytes(buffer.get(), 0xAB, 4000);  // not all of it
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(idle(s.get()));
  }
  const auto got = buffer.download();  // on the current stream s: after the memset
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != (i < 4000 ? 0xAB : 7)) {
      INFO("byte " << i << " is " << int(got[i]));
      REQUIRE(false);
    }
  }
  kc::memset_bytes(buffer.get(), 0, 0);  // nothing to do
}

TEST_CASE("cuda streams: stream_wait_stream orders work queued on two streams", "[cuda][stream]") {
  OwnStream a, b;
  DeviceBuffer<std::uint8_t> buffer(1024);
  {
    StreamGate gate(a.get());
    {
      kc::StreamGuard on_a(a.id());
      kc::memset_bytes(buffer.get(), 0x11, 1024);  // held back by the gate
    }
    kc::stream_wait_stream(b.id(), a.id());
    kc::StreamGuard on_b(b.id());
    kc::memset_bytes(buffer.get(), 0x22, 512);  // must land after a's memset, not before
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(idle(b.get()));  // b waits for a
  }
  kc::synchronize_stream(b.id());
  kc::StreamGuard on_b(b.id());
  const auto got = buffer.download();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != (i < 512 ? 0x22 : 0x11)) {
      INFO("byte " << i << " is " << int(got[i]));
      REQUIRE(false);
    }
  }
  kc::stream_wait_stream(a.id(), a.id());  // waiting on itself is nothing
}

TEST_CASE("cuda streams: one non-blocking copy stream per device", "[cuda][stream]") {
  const kc::StreamId copy = kc::copy_stream(0);
  CHECK(copy != 0);
  CHECK(kc::copy_stream(0) == copy);
  unsigned flags = 0;
  FRUGAL_CUDA_CHECK(cudaStreamGetFlags(reinterpret_cast<cudaStream_t>(copy), &flags));
  CHECK(flags == cudaStreamNonBlocking);
  CHECK_THROWS_AS(kc::copy_stream(kc::kMaxDevices), Error);
  // A DeviceGuard for the device already current changes nothing and restores it.
  {
    kc::DeviceGuard guard(0);
    CHECK(kc::current_device() == 0);
  }
  CHECK(kc::current_device() == 0);
}
