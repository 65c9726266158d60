// Tensors on a CUDA device through the engine: to(cuda) and back, non_blocking copies from
// pinned memory, ops and autograd against the same computation on the CPU, device-side
// allocation through frugal's CUDA allocator (the convolution workspace included), and the
// errors for mixing devices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "engine/frugal.h"
#include "kernels/cuda/stream.h"
#include "nn/nn.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {

const Device kGpu(kCUDA, 0);

// max |a - b| / (1 + |b|) over all elements, both brought to the CPU as float64.
double max_relative_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const Tensor x = a.detach().cpu().to(kFloat64).contiguous();
  const Tensor y = b.detach().cpu().to(kFloat64).contiguous();
  const double* xp = x.data_ptr<double>();
  const double* yp = y.data_ptr<double>();
  double worst = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i)
    worst = std::max(worst, std::abs(xp[i] - yp[i]) / (1 + std::abs(yp[i])));
  return worst;
}

bool identical(const Tensor& a, const Tensor& b) { return max_relative_difference(a, b) == 0; }

}  // namespace

TEST_CASE("cuda tensor: to(cuda) and back keeps every dtype's values, strided sources included",
          "[cuda]") {
  for (ScalarType dtype :
       {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    INFO(dtype_name(dtype));
    const Tensor values =
        dtype == kBool ? gt(arange(0, 24, 1, kFloat32), 11.0) : arange(0, 24, 1, kFloat32);
    const Tensor source = values.to(dtype).view({4, 6}).t();  // strided
    const Tensor on_gpu = source.to(kGpu);
    CHECK(on_gpu.is_cuda());
    CHECK(on_gpu.device() == kGpu);
    CHECK(on_gpu.dtype() == dtype);
    CHECK(on_gpu.sizes() == source.sizes());
    const Tensor back = on_gpu.cpu();
    CHECK(back.is_cpu());
    CHECK(identical(back, source));
    CHECK(on_gpu.to(kGpu).is_alias_of(on_gpu));      // already there
    CHECK(identical(on_gpu.clone().cpu(), source));  // a device-to-device copy
  }
  CHECK(ones({3}).cuda().toString() == "CUDAFloatType");
  CHECK(ones({}, TensorOptions(kInt64).device(kGpu)).item<std::int64_t>() == 1);
  std::ostringstream printed;
  printed << tensor({1.5f, -2.0f}).cuda();
  CHECK_THAT(printed.str(), Contains("1.5") && Contains("CUDAFloatType"));
}

TEST_CASE(
    "cuda tensor: a non_blocking copy from pinned memory lands, and its blocks are held until it "
    "has",
    "[cuda]") {
  auto& pinned = alloc::pinned_allocator();
  auto& device = alloc::cuda_allocator(0);
  const Tensor host = randn({256, 1024});  // 1 MiB
  Tensor staged = host.pin_memory();
  REQUIRE(staged.is_pinned());
  const std::int64_t pinned_active = pinned.stats().active.all().current;
  Tensor on_gpu = staged.to(kGpu, /*non_blocking=*/true);
  // The staging buffer is dropped at once, before the copy need have finished: the pinned
  // allocator keeps it active (out of reuse) until the copy stream's event is seen complete.
  staged = Tensor();
  CHECK(pinned.stats().active.all().current == pinned_active);
  // The current stream waits for the copy stream, so a kernel queued now sees the data.
  const Tensor doubled = mul(on_gpu, 2.0);
  CHECK(max_relative_difference(doubled, mul(host, 2.0)) == 0);
  // Blocking copies back to pageable memory are complete on return.
  CHECK(identical(on_gpu.cpu(), host));
  // Once the copy is done, the next pinned allocation finds the event complete and the block
  // free again: no new segment.
  kernels::cuda::synchronize_stream(kernels::cuda::copy_stream(0));
  const std::int64_t pinned_segments = pinned.stats().segment.all().current;
  const Tensor again = host.pin_memory();
  CHECK(pinned.stats().segment.all().current == pinned_segments);
  CHECK(pinned.stats().active.all().current == pinned_active);

  // record_stream from the engine: a block used on another stream stays active after its
  // tensor goes, until an allocation finds that stream's event complete.
  const kernels::cuda::StreamId copy_stream = kernels::cuda::copy_stream(0);
  Tensor used_elsewhere = empty({1 << 20}, TensorOptions(kFloat32).device(kGpu));
  used_elsewhere.record_stream(copy_stream);
  const std::int64_t active = device.stats().active.all().current;
  used_elsewhere = Tensor();
  CHECK(device.stats().active.all().current == active);
  kernels::cuda::synchronize_stream(copy_stream);
  const Tensor next = empty({16}, TensorOptions(kFloat32).device(kGpu));
  CHECK(device.stats().active.all().current == active);  // one block gone, one new
}

TEST_CASE("cuda tensor: elementwise, reductions, matmul and softmax match the CPU", "[cuda]") {
  manual_seed(3);
  const Tensor a = randn({5, 7}), b = randn({7}), m = randn({7, 4});
  const Tensor ga = a.cuda(), gb = b.cuda(), gm = m.cuda();
  CHECK(max_relative_difference(add(ga, gb), add(a, b)) < 1e-6);  // broadcasting
  CHECK(max_relative_difference(mul(ga.t(), 3.0), mul(a.t(), 3.0)) <
        1e-6);  // strided, scalar operand
  CHECK(max_relative_difference(relu(ga), relu(a)) == 0);
  CHECK(max_relative_difference(exp(ga), exp(a)) < 1e-6);
  CHECK(max_relative_difference(sum(ga, {1}), sum(a, {1})) < 1e-6);
  CHECK(max_relative_difference(mean(ga), mean(a)) < 1e-6);
  CHECK(max_relative_difference(var(ga, {0}, true, false), var(a, {0}, true, false)) < 1e-5);
  CHECK(identical(argmax(ga, 1), argmax(a, 1)));
  CHECK(identical(max(ga, 1, false).indices, max(a, 1, false).indices));
  CHECK(max_relative_difference(mm(ga, gm), mm(a, m)) < 1e-5);
  CHECK(max_relative_difference(softmax(ga, 1), softmax(a, 1)) < 1e-6);
  CHECK(max_relative_difference(log_softmax(ga, 0), log_softmax(a, 0)) < 1e-6);
  CHECK(identical(gt(ga, 0.0), gt(a, 0.0)));
  CHECK(identical(where(gt(ga, 0.0), ga, gb.view({1, 7})), where(gt(a, 0.0), a, b.view({1, 7}))));
  CHECK(max_relative_difference(ga.to(kFloat16), a.to(kFloat16)) == 0);
  CHECK(identical(zeros({3, 2}, TensorOptions(kInt32).device(kGpu)), zeros({3, 2}, kInt32)));
  CHECK(identical(arange(0, 10, 2, TensorOptions(kInt64).device(kGpu)), arange(0, 10, 2, kInt64)));
}

TEST_CASE("cuda tensor: random fills draw the CPU's numbers from the same generator state",
          "[cuda]") {
  manual_seed(11);
  const Tensor on_cpu = rand({1000});
  manual_seed(11);
  const Tensor on_gpu = rand({1000}, TensorOptions().device(kGpu));
  CHECK(identical(on_gpu, on_cpu));
  manual_seed(12);
  const Tensor mask_cpu = dropout(ones({4096}), 0.3, true);
  manual_seed(12);
  const Tensor mask_gpu = dropout(ones({4096}, TensorOptions().device(kGpu)), 0.3, true);
  CHECK(identical(mask_gpu, mask_cpu));
}

TEST_CASE("cuda tensor: a cnn's forward, loss and every gradient match the CPU's", "[cuda]") {
  for (const char* name : {"cnn", "mobilenet", "mlp"}) {
    INFO(name);
    manual_seed(5);
    auto cpu_model = nn::make_model(name);
    manual_seed(5);
    auto gpu_model = nn::make_model(name);
    gpu_model->to(kGpu);
    for (const Tensor& p : gpu_model->parameters()) CHECK(p.is_cuda());
    const Tensor images = randn({8, 1, 28, 28});
    const Tensor labels = randint(0, 10, {8}, kInt64);
    const Tensor loss_cpu = cross_entropy(cpu_model->forward(images), labels);
    const Tensor loss_gpu = cross_entropy(gpu_model->forward(images.cuda()), labels.cuda());
    CHECK(max_relative_difference(loss_gpu, loss_cpu) < 1e-4);
    loss_cpu.backward();
    loss_gpu.backward();
    const auto cpu_params = cpu_model->named_parameters(),
               gpu_params = gpu_model->named_parameters();
    REQUIRE(cpu_params.size() == gpu_params.size());
    for (std::size_t i = 0; i < cpu_params.size(); ++i) {
      INFO(cpu_params[i].first);
      REQUIRE(gpu_params[i].second.grad().defined());
      CHECK(gpu_params[i].second.grad().is_cuda());
      CHECK(max_relative_difference(gpu_params[i].second.grad(), cpu_params[i].second.grad()) <
            1e-3);
    }
    // One SGD step each: the parameters stay together.
    optim::SGD cpu_sgd(cpu_model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    optim::SGD gpu_sgd(gpu_model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    cpu_sgd.step();
    gpu_sgd.step();
    for (std::size_t i = 0; i < cpu_params.size(); ++i)
      CHECK(max_relative_difference(gpu_params[i].second, cpu_params[i].second) < 1e-4);
  }
}

TEST_CASE("cuda tensor: the convolution's workspace comes from frugal's CUDA allocator", "[cuda]") {
  auto& device = alloc::cuda_allocator(0);
  const Tensor input = randn({32, 64, 28, 28}).cuda(), weight = randn({64, 64, 3, 3}).cuda();
  kernels::cuda::synchronize_stream(kernels::cuda::current_stream());
  device.reset_peak_memory_stats();
  const std::int64_t before = device.stats().allocated_bytes.all().current;
  const std::int64_t allocations_before = device.stats().allocation.all().allocated;
  const Tensor out = conv2d(input, weight, Tensor(), {1, 1}, {1, 1}, {1, 1}, 1);
  const std::int64_t output_bytes = static_cast<std::int64_t>(out.nbytes());
  const auto stats = device.stats();
  // The output, plus the workspace when cuDNN's algorithm wants one: either way every byte
  // was counted by the allocator, and what the workspace took was given back.
  CHECK(stats.allocated_bytes.all().current - before >= output_bytes);
  CHECK(stats.allocated_bytes.all().peak - before >= output_bytes);
  CHECK(stats.allocation.all().allocated - allocations_before >= 1);
  CHECK(max_relative_difference(
            out, conv2d(input.cpu(), weight.cpu(), Tensor(), {1, 1}, {1, 1}, {1, 1}, 1)) < 1e-4);
}

TEST_CASE("cuda tensor: mixing devices is a clear error", "[cuda]") {
  const Tensor on_cpu = ones({3}), on_gpu = ones({3}).cuda();
  CHECK_THROWS_WITH(add(on_cpu, on_gpu), Contains("add") && Contains("cpu") && Contains("cuda:0"));
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({3, 2}).cuda()), Contains("mm"));
  CHECK_THROWS_WITH(on_gpu.pin_memory(), Contains("pin_memory"));
  CHECK_THROWS_WITH(cross_entropy(ones({2, 3}).cuda(), tensor(std::vector<std::int64_t>{0, 1})),
                    Contains("cross_entropy"));
  // copy_ across devices is allowed, as in PyTorch.
  Tensor target = zeros({3}).cuda();
  target.copy_(on_cpu);
  CHECK(identical(target, on_cpu));
}

TEST_CASE("cuda tensor: copies to a second device, from pinned memory and from the first device",
          "[cuda]") {
  if (cuda::device_count() < 2) {
    WARN("one CUDA device here: copies between devices are not exercised");
    return;
  }
  const Device second(kCUDA, 1);
  REQUIRE(kernels::cuda::current_device() == 0);
  const Tensor host = randn({256, 1024});
  // non_blocking from pinned memory while device 0 is current: the copy runs on device 1's copy
  // stream, and the pinned allocator's event must be made on device 1 (one made on device 0
  // fails cudaEventRecord on that stream).
  Tensor staged = host.pin_memory();
  const Tensor on_second = staged.to(second, /*non_blocking=*/true);
  staged = Tensor();
  CHECK(on_second.device() == second);
  CHECK(identical(on_second, host));
  // Device to device, both ways, and back to the host.
  const Tensor on_first = host.to(kGpu);
  CHECK(identical(on_first.to(second), host));
  CHECK(identical(on_second.to(kGpu), host));
  CHECK(kernels::cuda::current_device() == 0);
}

TEST_CASE("cuda tensor: ops on the second device run there while the first is current", "[cuda]") {
  if (cuda::device_count() < 2) {
    WARN("one CUDA device here: ops on a second device are not exercised");
    return;
  }
  const Device second(kCUDA, 1);
  REQUIRE(kernels::cuda::current_device() == 0);
  const std::int64_t allocated_on_first =
      alloc::cuda_allocator(0).stats().allocated_bytes.all().current;
  // A small cnn step on device 1: elementwise, reductions, GEMM (cuBLAS), convolution (cuDNN),
  // batch norm, pooling and the loss, forward and backward, against the same step on the CPU.
  manual_seed(3);
  const auto cpu_model = nn::make_model("cnn");
  manual_seed(3);
  const auto gpu_model = nn::make_model("cnn");
  gpu_model->to(second);
  const Tensor x = randn({8, 1, 28, 28}), y = randint(0, 10, {8});
  const Tensor cpu_loss = cross_entropy(cpu_model->forward(x), y);
  const Tensor gpu_loss = cross_entropy(gpu_model->forward(x.to(second)), y.to(second));
  CHECK(gpu_loss.device() == second);
  cpu_loss.backward();
  gpu_loss.backward();
  CHECK(max_relative_difference(gpu_loss, cpu_loss) < 1e-4);
  const auto cpu_parameters = cpu_model->parameters(), gpu_parameters = gpu_model->parameters();
  for (std::size_t i = 0; i < cpu_parameters.size(); ++i) {
    CHECK(gpu_parameters[i].grad().device() == second);
    CHECK(max_relative_difference(gpu_parameters[i].grad(), cpu_parameters[i].grad()) < 1e-3);
  }
  // Device 0 stayed current, and none of that memory came from its allocator.
  CHECK(kernels::cuda::current_device() == 0);
  CHECK(alloc::cuda_allocator(0).stats().allocated_bytes.all().current == allocated_on_first);
}
