// kernels/cuda/conv (cuDNN, and the direct depthwise path) against the CPU reference on random
// inputs: 3x3 pad 1, stride 2, 1x1, dilation, groups 2, depthwise, bias, N = 0, workspaces, and
// the fallback to cheaper algorithms when the preferred workspace cannot be had.
#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "common/half.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "tests/cuda/device_buffer.h"
#include "tests/cuda/tensor_compare.h"

using namespace frugal;
using namespace frugal::test;
using kernels::cpu::Conv2dParams;

namespace {

Conv2dParams make(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t O,
                  std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                  std::int64_t groups) {
  Conv2dParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.O = O, p.kH = k, p.kW = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }
double scale_for(std::int64_t terms) {
  return std::max(1.0, std::sqrt(static_cast<double>(terms)));
}

// Which workspaces check_all hands the CUDA kernels: the preferred algorithm's, or in turn
// every size the kernels can fall back to (each runs a different cuDNN algorithm) down to the
// smallest, which is none wherever cuDNN offers a workspace-free algorithm.
enum class Workspaces { kPreferred, kEveryFallback };

std::vector<std::size_t> sizes_to_try(std::size_t preferred,
                                      const std::vector<std::size_t>& fallbacks, Workspaces which) {
  REQUIRE(!fallbacks.empty());
  CHECK(fallbacks.front() == preferred);
  for (std::size_t i = 1; i < fallbacks.size(); ++i) CHECK(fallbacks[i] < fallbacks[i - 1]);
  if (which == Workspaces::kPreferred) return {preferred};
  return fallbacks;
}

template <class T>
void check_all(const Conv2dParams& p, bool with_bias, std::uint32_t seed,
               Workspaces which = Workspaces::kPreferred) {
  namespace cpu = kernels::cpu;
  namespace cu = kernels::cuda;
  const std::int64_t oh = p.out_h(), ow = p.out_w();
  const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.O * oh * ow;
  const std::int64_t w_n = p.O * (p.C / p.groups) * p.kH * p.kW;
  const auto x = random_values<T>(sz(in_n), seed);
  const auto w = random_values<T>(sz(w_n), seed + 1);
  const auto bias = random_values<T>(sz(p.O), seed + 2);
  const auto gy = random_values<T>(sz(out_n), seed + 3);
  DeviceBuffer<T> dx(x), dw(w), dbias(bias), dgy(gy);
  const std::string name = type_name(T{});

  {  // forward
    std::vector<unsigned char> ws(cpu::conv2d_forward_workspace_bytes<T>(p, 1));
    std::vector<T> y(sz(out_n));
    cpu::conv2d_forward(p, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(),
                        ws.data(), ws.size());
    for (const std::size_t bytes :
         sizes_to_try(cu::conv2d_forward_workspace_bytes<T>(p, 1),
                      cu::conv2d_forward_workspace_fallbacks<T>(p), which)) {
      INFO("workspace " << bytes << " bytes");
      DeviceBuffer<unsigned char> dws(bytes);
      DeviceBuffer<T> dy(sz(out_n));
      cu::conv2d_forward(p, dx.get(), dw.get(), with_bias ? dbias.get() : nullptr, dy.get(),
                         bytes > 0 ? dws.get() : nullptr, bytes);
      require_close(dy.download(), y, name + " conv2d_forward",
                    scale_for(p.C / p.groups * p.kH * p.kW));
    }
  }
  {  // backward input
    std::vector<unsigned char> ws(cpu::conv2d_backward_input_workspace_bytes<T>(p, 1));
    std::vector<T> gx(sz(in_n));
    cpu::conv2d_backward_input(p, gy.data(), w.data(), gx.data(), ws.data(), ws.size());
    for (const std::size_t bytes :
         sizes_to_try(cu::conv2d_backward_input_workspace_bytes<T>(p, 1),
                      cu::conv2d_backward_input_workspace_fallbacks<T>(p), which)) {
      INFO("workspace " << bytes << " bytes");
      DeviceBuffer<unsigned char> dws(bytes);
      DeviceBuffer<T> dgx(sz(in_n));
      cu::conv2d_backward_input(p, dgy.get(), dw.get(), dgx.get(), bytes > 0 ? dws.get() : nullptr,
                                bytes);
      require_close(dgx.download(), gx, name + " conv2d_backward_input",
                    scale_for(p.O / p.groups * p.kH * p.kW));
    }
  }
  {  // backward weight (+ bias)
    std::vector<unsigned char> ws(cpu::conv2d_backward_weight_workspace_bytes<T>(p, 1));
    std::vector<T> gw(sz(w_n)), gb(sz(p.O));
    cpu::conv2d_backward_weight(p, gy.data(), x.data(), gw.data(), with_bias ? gb.data() : nullptr,
                                ws.data(), ws.size());
    for (const std::size_t bytes :
         sizes_to_try(cu::conv2d_backward_weight_workspace_bytes<T>(p, 1),
                      cu::conv2d_backward_weight_workspace_fallbacks<T>(p), which)) {
      INFO("workspace " << bytes << " bytes");
      DeviceBuffer<unsigned char> dws(bytes);
      // Garbage in the outputs: they must be overwritten, not accumulated into.
      DeviceBuffer<T> dgw(random_values<T>(sz(w_n), seed + 4, 5, 6));
      DeviceBuffer<T> dgb(random_values<T>(sz(p.O), seed + 5, 5, 6));
      cu::conv2d_backward_weight(p, dgy.get(), dx.get(), dgw.get(), with_bias ? dgb.get() : nullptr,
                                 bytes > 0 ? dws.get() : nullptr, bytes);
      require_close(dgw.download(), gw, name + " conv2d_backward_weight", scale_for(p.N * oh * ow));
      if (with_bias)
        require_close(dgb.download(), gb, name + " conv2d_backward_weight bias",
                      scale_for(p.N * oh * ow));
    }
  }
}

const Conv2dParams kShapes[] = {
    make(2, 3, 9, 7, 5, 3, 1, 1, 1, 1),    // 3x3 pad 1, odd sizes
    make(2, 4, 11, 10, 6, 3, 2, 1, 1, 1),  // stride 2
    make(3, 8, 5, 6, 7, 1, 1, 0, 1, 1),    // 1x1
    make(1, 3, 12, 9, 4, 3, 1, 2, 2, 1),   // dilation 2
    make(2, 6, 8, 7, 4, 3, 1, 1, 1, 2),    // groups 2
    make(2, 5, 9, 8, 5, 3, 2, 1, 1, 5),    // depthwise: the direct kernels
};

}  // namespace

TEMPLATE_TEST_CASE("cuda conv: forward and both backwards vs the CPU", "[cuda]", float, double,
                   Half, BFloat16) {
  std::uint32_t seed = 10;
  for (const Conv2dParams& p : kShapes)
    for (bool with_bias : {false, true}) {
      INFO("N=" << p.N << " C=" << p.C << " H=" << p.H << " W=" << p.W << " O=" << p.O
                << " k=" << p.kH << " stride=" << p.stride_h << " pad=" << p.pad_h
                << " dilation=" << p.dilation_h << " groups=" << p.groups << " bias=" << with_bias);
      check_all<TestType>(p, with_bias, seed += 10);
    }
}

TEST_CASE("cuda conv: depthwise needs no workspace", "[cuda]") {
  const Conv2dParams p = make(2, 5, 9, 8, 5, 3, 2, 1, 1, 5);
  CHECK(kernels::cuda::conv2d_forward_workspace_bytes<float>(p, 1) == 0);
  CHECK(kernels::cuda::conv2d_backward_input_workspace_bytes<float>(p, 1) == 0);
  CHECK(kernels::cuda::conv2d_backward_weight_workspace_bytes<float>(p, 1) == 0);
}

TEST_CASE("cuda conv: N = 0 does nothing, and zeroes the weight gradients", "[cuda]") {
  const Conv2dParams p = make(0, 3, 8, 8, 4, 3, 1, 1, 1, 1);
  CHECK(kernels::cuda::conv2d_forward_workspace_bytes<float>(p, 1) == 0);
  kernels::cuda::conv2d_forward<float>(p, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
  kernels::cuda::conv2d_backward_input<float>(p, nullptr, nullptr, nullptr, nullptr, 0);
  DeviceBuffer<float> gw(random_values<float>(4 * 3 * 9, 1)), gb(random_values<float>(4, 2));
  kernels::cuda::conv2d_backward_weight<float>(p, nullptr, nullptr, gw.get(), gb.get(), nullptr, 0);
  for (float v : gw.download()) CHECK(v == 0.0f);
  for (float v : gb.download()) CHECK(v == 0.0f);
}

TEST_CASE("cuda conv: a workspace too small for every algorithm throws, bad params throw",
          "[cuda]") {
  // A workspace below the preferred one runs a cheaper algorithm (the next test case); one
  // below every algorithm's throws. cuDNN normally offers a workspace-free algorithm, and then
  // no workspace is too small: only shapes where it does not are checked here.
  for (const Conv2dParams& p : kShapes) {
    const std::int64_t in_n = p.N * p.C * p.H * p.W, out_n = p.N * p.O * p.out_h() * p.out_w();
    DeviceBuffer<float> x(sz(in_n)), y(sz(out_n)), w(sz(p.O * (p.C / p.groups) * p.kH * p.kW));
    const std::size_t f = kernels::cuda::conv2d_forward_workspace_fallbacks<float>(p).back();
    const std::size_t bi =
        kernels::cuda::conv2d_backward_input_workspace_fallbacks<float>(p).back();
    const std::size_t bw =
        kernels::cuda::conv2d_backward_weight_workspace_fallbacks<float>(p).back();
    DeviceBuffer<unsigned char> ws(std::max({f, bi, bw}));
    if (f > 0)
      CHECK_THROWS_AS(kernels::cuda::conv2d_forward<float>(p, x.get(), w.get(), nullptr, y.get(),
                                                           ws.get(), f - 1),
                      Error);
    if (bi > 0)
      CHECK_THROWS_AS(kernels::cuda::conv2d_backward_input<float>(p, y.get(), w.get(), x.get(),
                                                                  ws.get(), bi - 1),
                      Error);
    if (bw > 0)
      CHECK_THROWS_AS(kernels::cuda::conv2d_backward_weight<float>(p, y.get(), x.get(), w.get(),
                                                                   nullptr, ws.get(), bw - 1),
                      Error);
  }
  Conv2dParams bad = make(1, 3, 8, 8, 4, 3, 1, 1, 1, 2);  // 3 channels in 2 groups
  CHECK_THROWS_AS(kernels::cuda::conv2d_forward_workspace_bytes<float>(bad, 1), Error);
  CHECK_THROWS_AS(
      kernels::cuda::conv2d_forward<float>(bad, nullptr, nullptr, nullptr, nullptr, nullptr, 0),
      Error);
}

TEMPLATE_TEST_CASE(
    "cuda conv: every fallback workspace, down to the smallest, gives the CPU's "
    "result",
    "[cuda]", float, double, Half, BFloat16) {
  std::uint32_t seed = 500;
  for (const Conv2dParams& p : kShapes) {
    INFO("N=" << p.N << " C=" << p.C << " H=" << p.H << " W=" << p.W << " O=" << p.O
              << " k=" << p.kH << " stride=" << p.stride_h << " pad=" << p.pad_h
              << " dilation=" << p.dilation_h << " groups=" << p.groups);
    const std::size_t smallest[] = {
        kernels::cuda::conv2d_forward_workspace_fallbacks<TestType>(p).back(),
        kernels::cuda::conv2d_backward_input_workspace_fallbacks<TestType>(p).back(),
        kernels::cuda::conv2d_backward_weight_workspace_fallbacks<TestType>(p).back()};
    // Forward in float and double has implicit GEMM, which needs no workspace, for every
    // shape here. Elsewhere a workspace-free algorithm is likely but not promised: the
    // fallback then ends at the smallest workspace, which is still tested below.
    if (std::is_same_v<TestType, float> || std::is_same_v<TestType, double>)
      CHECK(smallest[0] == 0);
    const char* const passes[] = {"forward", "backward input", "backward weight"};
    for (int i = 0; i < 3; ++i)
      if (smallest[i] > 0)
        WARN(type_name(TestType{})
             << " " << passes[i] << ": cuDNN offers no workspace-free "
             << "algorithm here; the smallest needs " << smallest[i] << " bytes");
    seed += 10;
    check_all<TestType>(p, /*with_bias=*/seed % 20 == 0, seed, Workspaces::kEveryFallback);
  }
}

TEST_CASE(
    "cuda conv: conv2d_forward given no workspace matches its result with the preferred "
    "one",
    "[cuda]") {
  namespace cu = kernels::cuda;
  // Shapes where cuDNN's preferred forward algorithms tend to want a workspace (Winograd,
  // FFT, precomputed GEMM), so that none really runs another algorithm.
  const Conv2dParams shapes[] = {make(4, 32, 28, 28, 32, 3, 1, 1, 1, 1),
                                 make(2, 16, 32, 32, 16, 5, 1, 2, 1, 1)};
  std::uint32_t seed = 900;
  int with_workspace = 0;
  for (const Conv2dParams& p : shapes) {
    const std::int64_t out_n = p.N * p.O * p.out_h() * p.out_w();
    const auto x = random_values<float>(sz(p.N * p.C * p.H * p.W), seed += 10);
    const auto w = random_values<float>(sz(p.O * p.C * p.kH * p.kW), seed + 1);
    std::vector<float> want(sz(out_n));
    std::vector<unsigned char> cpu_ws(kernels::cpu::conv2d_forward_workspace_bytes<float>(p, 1));
    kernels::cpu::conv2d_forward<float>(p, x.data(), w.data(), nullptr, want.data(), cpu_ws.data(),
                                        cpu_ws.size());
    DeviceBuffer<float> dx(x), dw(w), preferred(sz(out_n)), none(sz(out_n));
    const std::size_t bytes = cu::conv2d_forward_workspace_bytes<float>(p, 1);
    with_workspace += bytes > 0;
    DeviceBuffer<unsigned char> ws(bytes);
    cu::conv2d_forward<float>(p, dx.get(), dw.get(), nullptr, preferred.get(), ws.get(), bytes);
    cu::conv2d_forward<float>(p, dx.get(), dw.get(), nullptr, none.get(), nullptr, 0);
    const double scale = scale_for(p.C * p.kH * p.kW);
    // Two algorithms round differently: each within float32's tolerance of the CPU, and of
    // each other.
    require_close(preferred.download(), want, "preferred workspace", scale);
    require_close(none.download(), want, "no workspace", scale);
    require_close(none.download(), preferred.download(), "no workspace vs preferred", 2 * scale);
  }
  if (with_workspace == 0)
    WARN("cuDNN preferred workspace-free forward algorithms for these shapes on this GPU");
}

namespace {

// Restores the CUDA allocator's cap when a test ends, failed or not.
class MemoryLimitGuard {
 public:
  explicit MemoryLimitGuard(alloc::CachingAllocator& allocator)
      : allocator_(allocator), before_(allocator.memory_limit()) {}
  ~MemoryLimitGuard() { allocator_.set_memory_limit(before_); }
  MemoryLimitGuard(const MemoryLimitGuard&) = delete;
  MemoryLimitGuard& operator=(const MemoryLimitGuard&) = delete;

 private:
  alloc::CachingAllocator& allocator_;
  std::size_t before_;
};

}  // namespace

TEST_CASE(
    "cuda conv: when the GPU cannot give the preferred workspace, conv2d and its backward "
    "run a cheaper algorithm instead of failing",
    "[cuda]") {
  namespace cu = kernels::cuda;
  // Small tensors (at most 512 KiB each: the allocator's small pool) with kernels for which
  // cuDNN's preferred algorithms may want workspaces of megabytes (FFT, Winograd): the shape
  // whose preferred workspace is largest is taken.
  const Conv2dParams shapes[] = {
      make(8, 16, 32, 32, 16, 3, 1, 1, 1, 1), make(8, 16, 32, 32, 16, 5, 1, 2, 1, 1),
      make(4, 32, 32, 32, 32, 3, 1, 1, 1, 1), make(4, 32, 32, 32, 32, 5, 1, 2, 1, 1),
      make(2, 64, 32, 32, 64, 3, 1, 1, 1, 1), make(8, 8, 48, 40, 8, 7, 1, 3, 1, 1),
      make(16, 64, 8, 8, 64, 3, 1, 1, 1, 1)};
  Conv2dParams p = shapes[0];
  std::size_t forward = 0, backward_input = 0, backward_weight = 0;
  for (const Conv2dParams& candidate : shapes) {
    const std::size_t f = cu::conv2d_forward_workspace_bytes<float>(candidate, 1);
    const std::size_t bi = cu::conv2d_backward_input_workspace_bytes<float>(candidate, 1);
    const std::size_t bw = cu::conv2d_backward_weight_workspace_bytes<float>(candidate, 1);
    if (std::max({f, bi, bw}) > std::max({forward, backward_input, backward_weight}))
      p = candidate, forward = f, backward_input = bi, backward_weight = bw;
  }
  INFO("N=" << p.N << " C=" << p.C << " H=" << p.H << " W=" << p.W << " O=" << p.O << " k=" << p.kH
            << "; preferred workspaces: forward " << forward << ", backward input "
            << backward_input << ", backward weight " << backward_weight);

  // The CPU reference.
  Tensor x = randn({p.N, p.C, p.H, p.W}), w = randn({p.O, p.C, p.kH, p.kW}), b = randn({p.O});
  const Tensor gy = randn({p.N, p.O, p.out_h(), p.out_w()});
  x.requires_grad_(true);
  w.requires_grad_(true);
  b.requires_grad_(true);
  const Int2 stride{p.stride_h, p.stride_w}, padding{p.pad_h, p.pad_w};
  const Tensor want = conv2d(x, w, b, stride, padding);
  want.backward(gy);

  Tensor xg = x.detach().cuda(), wg = w.detach().cuda(), bg = b.detach().cuda();
  const Tensor gyg = gy.cuda();
  xg.requires_grad_(true);
  wg.requires_grad_(true);
  bg.requires_grad_(true);
  auto& device = alloc::cuda_allocator(0);
  // With every stream idle, empty_cache gives back every free segment (blocks waiting for
  // other streams' events included): a later retry inside the allocator finds nothing more.
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  device.empty_cache();
  device.reset_peak_memory_stats();
  // The cap leaves 4 MiB above what is reserved now: room for the output and the gradients
  // (small-pool blocks of 512 KiB at most, with or without expandable segments). A workspace
  // larger than that plus the largest cached free block cannot be had.
  const std::size_t headroom = std::size_t{4} << 20;
  const std::size_t cap = device.memory_reserved() + headroom;
  const std::size_t no_room = headroom + device.memory_report().largest_free_block;
  MemoryLimitGuard restore(device);
  device.set_memory_limit(cap);
  if (std::max({forward, backward_input, backward_weight}) <= no_room)
    WARN("cuDNN's preferred workspaces here fit under the cap (at most "
         << std::max({forward, backward_input, backward_weight}) << " bytes): no fallback is "
         << "exercised on this GPU, only the result under the cap");

  const std::int64_t ooms_before = device.stats().num_ooms;
  const Tensor out = conv2d(xg, wg, bg, stride, padding);
  const std::int64_t ooms_forward = device.stats().num_ooms - ooms_before;
  out.backward(gyg);
  const std::int64_t ooms_backward = device.stats().num_ooms - ooms_before - ooms_forward;

  // Each pass whose preferred workspace cannot fit was refused at least once, and ran anyway.
  CHECK(ooms_forward >= (forward > no_room ? 1 : 0));
  CHECK(ooms_backward >= (backward_input > no_room ? 1 : 0) + (backward_weight > no_room ? 1 : 0));
  const auto stats = device.stats();
  CHECK(static_cast<std::size_t>(stats.allocated_bytes.all().peak) <= cap);
  CHECK(static_cast<std::size_t>(stats.reserved_bytes.all().peak) <= cap);
  CHECK(max_relative_difference(out, want) < 1e-4);
  CHECK(max_relative_difference(xg.grad(), x.grad()) < 1e-4);
  CHECK(max_relative_difference(wg.grad(), w.grad()) < 1e-4);
  CHECK(max_relative_difference(bg.grad(), b.grad()) < 1e-4);
}
