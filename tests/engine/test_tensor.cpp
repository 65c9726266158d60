// Tensors: storage from the caching allocator, views sharing it, contiguous() copying only
// when needed, factories (reproducible random ones), conversions, printing, and the errors
// bad shapes, dtypes and devices raise.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "allocator/cuda_device.h"
#include "allocator/default_allocators.h"
#include "engine/frugal.h"

using namespace frugal;
using Catch::Matchers::Contains;

namespace {
std::int64_t requested_now() {
  return alloc::cpu_allocator().stats().requested_bytes.all().current;
}
}  // namespace

TEST_CASE("storage comes from the allocator and returns when the last view dies") {
  const std::int64_t before = requested_now();
  {
    Tensor a = empty({256, 4});
    CHECK(requested_now() - before == 256 * 4 * 4);
    Tensor v = a.view({1024});
    a = Tensor();  // the view keeps the storage alive
    CHECK(requested_now() - before == 256 * 4 * 4);
  }
  CHECK(requested_now() == before);
}

TEST_CASE("views share storage; contiguous() copies only when needed") {
  Tensor a = arange(24, kFloat32).view({2, 3, 4});
  Tensor checks[] = {a.view({6, 4}),
                     a.reshape({4, 6}),
                     a.transpose(0, 2),
                     a.permute({1, 2, 0}),
                     a.narrow(2, 1, 2),
                     a.slice(1, 0, 3, 2),
                     a.select(0, 1),
                     a.unsqueeze(1).expand({2, 5, 3, 4}),
                     a.unsqueeze(0).squeeze(0),
                     a.flatten(1)};
  for (const Tensor& v : checks) CHECK(v.is_alias_of(a));
  CHECK(a.contiguous().data_ptr() == a.data_ptr());
  Tensor t = a.transpose(0, 2);
  CHECK_FALSE(t.is_contiguous());
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK_FALSE(c.is_alias_of(a));
  CHECK(c.sizes() == IntArrayRef{4, 3, 2});
  CHECK(c.select(0, 3).select(0, 2).select(0, 1).item<float>() == a[1][2][3].item<float>());
  // A reshape that no strides can express copies.
  CHECK_FALSE(t.reshape({-1}).is_alias_of(a));
  CHECK(a.select(2, 3).stride(0) == 12);
  CHECK(a.slice(1, 1).storage_offset() == 4);
  // Writing through a view is visible in the base.
  a.select(0, 0).select(0, 0).fill_(42);
  CHECK(a[0][0][3].item<float>() == 42);
}

TEST_CASE("factories") {
  CHECK(zeros({2, 2}).sum().item<float>() == 0);
  CHECK(ones({3}, kInt64).sum().item<std::int64_t>() == 3);
  CHECK(full({2}, 2.5, kFloat64)[1].item<double>() == 2.5);
  CHECK(arange(5).dtype() == kInt64);
  CHECK(arange(0.0, 1.0, 0.25).numel() == 4);
  CHECK(arange(0.0, 1.0, 0.25)[3].item<float>() == 0.75f);
  Tensor t = tensor({1.0f, 2.0f, 3.0f});
  CHECK(t.dtype() == kFloat32);
  CHECK(t.sum().item<float>() == 6);
  const double raw[] = {1, 2, 3, 4};
  CHECK(from_data(raw, {2, 2}, kFloat64)[1][0].item<double>() == 3);
  // Seeded generators reproduce their numbers; the default generator too after manual_seed.
  Generator g1(5), g2(5);
  CHECK(eq(randn({100}, {}, &g1), randn({100}, {}, &g2)).sum().item<std::int64_t>() == 100);
  manual_seed(3);
  Tensor r1 = rand({50});
  manual_seed(3);
  CHECK(eq(r1, rand({50})).sum().item<std::int64_t>() == 50);
  CHECK(r1.max().item<float>() < 1);
  CHECK(r1.min().item<float>() >= 0);
  Tensor n = randn({20000}, kFloat64, &g1);
  CHECK(std::abs(n.mean().item<double>()) < 0.03);
  CHECK(std::abs(n.var({0}).item<double>() - 1) < 0.05);
  Tensor ri = randint(3, 7, {1000}, kInt64, &g1);
  CHECK(ri.min().item<std::int64_t>() == 3);
  CHECK(ri.max().item<std::int64_t>() == 6);
}

TEST_CASE("sizes whose element count passes 64 bits are an error, not a wrapped allocation") {
  const std::int64_t big = std::int64_t{1} << 40;
  CHECK_THROWS_WITH(empty({big, big}), Contains("more elements than fit in 64 bits"));
  CHECK(shape_numel(IntArrayRef{big, big, 0}) == 0);  // still an empty tensor
  CHECK(empty({big, 0, big}).numel() == 0);
  // Strides of an empty tensor with huge sizes saturate instead of overflowing (fuzz_idx).
  CHECK(empty({0, big, big, big}).numel() == 0);
}

TEST_CASE("dtypes: conversions, promotion, item") {
  Tensor i = tensor(std::vector<std::int32_t>{1, 2, 3});
  CHECK((i + 0.5).dtype() == kFloat32);
  CHECK((i * 2).dtype() == kInt32);
  CHECK((i / 2).dtype() == kFloat32);
  CHECK(add(tensor({1.0f}), tensor({1.0}, kFloat64)).dtype() == kFloat64);
  CHECK(add(tensor({1.0f}), full({}, 1.0, kFloat64)).dtype() == kFloat32);  // 0-dim does not widen
  CHECK(add(tensor({1.0}, kFloat16), tensor({1.0}, kBFloat16)).dtype() == kFloat32);
  for (ScalarType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    Tensor x = arange(3, kInt64).to(t);
    CHECK(x.dtype() == t);
    CHECK(x.element_size() == element_size(t));
    CHECK(x[t == kBool ? 1 : 2].item<double>() == (t == kBool ? 1.0 : 2.0));
  }
  CHECK(tensor({1.5f}).to(kFloat16).item<float>() == 1.5f);
  CHECK(tensor({3.7f}).to(kInt32).item<std::int32_t>() == 3);
  // To bool is "!= 0" in the source's precision: a double too small for float is still true.
  const Tensor tiny = tensor({1e-50, 0.0, -0.0, std::nan("")}, kFloat64).to(kBool);
  CHECK(tiny[0].item<bool>());
  CHECK_FALSE(tiny[1].item<bool>());
  CHECK_FALSE(tiny[2].item<bool>());
  CHECK(tiny[3].item<bool>());
  CHECK(tensor(std::vector<std::int64_t>{std::int64_t{1} << 62}).to(kBool).item<bool>());
}

TEST_CASE("operator<< prints like libtorch") {
  std::ostringstream s;
  s << tensor({1.0f, 2.5f, -3.0f, 4.0f}, {}).view({2, 2});
  CHECK_THAT(s.str(), Contains("2.5000"));
  CHECK_THAT(s.str(), Contains("[ CPUFloatType{2,2} ]"));
  std::ostringstream z;
  z << full({}, 7, kInt64);
  CHECK_THAT(z.str(), Contains("7"));
  CHECK_THAT(z.str(), Contains("[ CPULongType{} ]"));
  std::ostringstream big;
  big << zeros({3000});
  CHECK_THAT(big.str(), Contains("..."));
}

TEST_CASE("bad shapes, dtypes and devices raise frugal::Error naming the op") {
  CHECK_THROWS_WITH(add(ones({2, 3}), ones({4})),
                    Contains("add") && Contains("[2, 3]") && Contains("[4]"));
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({2, 3})), Contains("mm") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(ones({6}).view({4, -1}), Contains("view") && Contains("[4, -1]"));
  CHECK_THROWS_WITH(ones({2, 3}).transpose(0, 2),
                    Contains("transpose") && Contains("out of range"));
  CHECK_THROWS_WITH(ones({2}, kInt64).requires_grad_(), Contains("floating"));
  CHECK_THROWS_WITH(neg(ones({2}, kBool)), Contains("neg") && Contains("bool"));
  CHECK_THROWS_WITH(mean(ones({2}, kInt64)), Contains("mean") && Contains("int64"));
  CHECK_THROWS_WITH(ones({2}).item<float>(), Contains("item"));
  CHECK_THROWS_WITH(empty({-1}), Contains("empty") && Contains("negative"));
  if (!cuda::is_available())
    CHECK_THROWS_WITH(ones({2}, Device(kCUDA)),
                      Contains(cuda::is_built() ? "no usable CUDA device" : "built without CUDA"));
  CHECK_THROWS_WITH(Device("tpu"), Contains("tpu"));
  CHECK_THROWS_WITH(conv2d(ones({1, 3, 5, 5}), ones({4, 2, 3, 3})),
                    Contains("conv2d") && Contains("groups"));
  CHECK_THROWS_WITH(cross_entropy(ones({2, 3}), tensor(std::vector<std::int64_t>{0, 3})),
                    Contains("3"));
  CHECK_THROWS_WITH(ones({2, 3}).data_ptr<double>(), Contains("float32") && Contains("float64"));
}

TEST_CASE("pin_memory copies a CPU tensor into the pinned allocator's blocks, freed with it") {
  auto& pinned = alloc::pinned_allocator();
  const std::int64_t before = pinned.stats().allocation.all().current;
  const Tensor source = arange(0, 12, 1, kFloat32).view({3, 4}).t();  // not contiguous
  Tensor p = source.pin_memory();
  CHECK(p.is_pinned());
  CHECK_FALSE(source.is_pinned());
  CHECK(p.is_cpu());
  CHECK(p.is_contiguous());
  CHECK(p.sizes() == source.sizes());
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 3; ++j) CHECK(p[i][j].item<float>() == source[i][j].item<float>());
  CHECK(p.pin_memory().is_alias_of(p));  // already pinned: no copy
  CHECK(pinned.stats().allocation.all().current == before + 1);
  p.record_stream(0);  // on the CPU a no-op for ordinary tensors, a recorded use for pinned ones
  p = Tensor();
  CHECK(pinned.stats().allocation.all().current == before);
  CHECK(source.to(Device(kCPU)).is_alias_of(source));  // already there: the tensor itself
}
