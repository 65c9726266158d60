// Copies between the CPU and CUDA devices. A blocking copy runs on the current stream and is
// complete on return. A non_blocking one between pinned host memory and a device runs on the
// device's copy stream, so it overlaps the compute queued on the current stream: the copy
// stream first waits for the current one (the destination block may be one the current
// stream just freed, and the source may still be being written), both blocks are
// record_stream'ed onto the copy stream (neither is handed out again before the copy has
// read or written it), and the current stream then waits for the copy, so the kernels queued
// after it see the data.
#include "engine/ops/device_copy.h"

#include "allocator/default_allocators.h"
#include "common/error.h"
#include "engine/ops/copy.h"
#include "engine/ops/factory.h"
#include "engine/storage.h"
#include "engine/tensor_impl.h"

#if FRUGAL_WITH_CUDA
#include "kernels/cuda/stream.h"
#endif

namespace frugal {

namespace {

#if FRUGAL_WITH_CUDA
void transfer(const Tensor& dst, const Tensor& src, bool non_blocking) {
  namespace kc = kernels::cuda;
  const kc::CopyKind kind = src.is_cpu()   ? kc::CopyKind::HostToDevice
                            : dst.is_cpu() ? kc::CopyKind::DeviceToHost
                                           : kc::CopyKind::DeviceToDevice;
  const Tensor& on_device = src.is_cuda() ? src : dst;
  const Tensor& on_host = src.is_cpu() ? src : dst;
  if (kind == kc::CopyKind::DeviceToDevice && src.device() != dst.device()) {
    // The copy runs on src's device, but dst's block comes from dst's device's cache, where a
    // block freed by work still queued on that device's current stream is handed out again at
    // once (that stream would run in order): wait for that work before overwriting it.
    const kc::DeviceGuard dst_guard(dst.device().index());
    kc::synchronize_stream(kc::current_stream());
  }
  const kc::DeviceGuard guard(on_device.device().index());
  const kc::StreamId current = kc::current_stream();
  const bool async = non_blocking && kind != kc::CopyKind::DeviceToDevice && on_host.is_pinned();
  if (!async) {
    kc::copy_bytes(dst.data_ptr(), src.data_ptr(), dst.nbytes(), kind, current, false);
    return;
  }
  const kc::StreamId copy = kc::copy_stream(on_device.device().index());
  kc::stream_wait_stream(copy, current);
  kc::copy_bytes(dst.data_ptr(), src.data_ptr(), dst.nbytes(), kind, copy, true);
  dst.record_stream(copy);
  src.record_stream(copy);
  kc::stream_wait_stream(current, copy);
}
#else
[[noreturn]] void transfer(const Tensor&, const Tensor&, bool) {
  throw Error("to: this build has no CUDA devices to copy to or from");
}
#endif

}  // namespace

Tensor move_to_device(const Tensor& t, Device device, bool non_blocking) {
  device = resolve_device(device);
  if (device == t.device()) return t;
  allocator_for(device, "to");  // the clear error for a device this build or machine lacks
  const Tensor src = contiguous(t);
  Tensor out = empty(src.sizes(), src.options().device(device));
  if (out.nbytes()) transfer(out, src, non_blocking);
  return out;
}

Tensor Tensor::pin_memory() const {
  FRUGAL_CHECK(is_cpu(),
               "pin_memory: only CPU tensors can be pinned, this one is on " + device().str());
  if (is_pinned()) return *this;
  const Tensor src = frugal::contiguous(*this);
  auto storage = std::make_shared<StorageImpl>(src.nbytes(), alloc::pinned_allocator(), true);
  Tensor out(
      std::make_shared<TensorImpl>(std::move(storage), src.sizes(), src.strides(), 0, src.dtype()));
  copy_data(out, src);
  return out;
}

}  // namespace frugal
