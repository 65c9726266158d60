// The CUDA device backend. The runtime API serves plain segments and events; the driver's
// virtual memory calls, for expandable segments, are looked up through the runtime
// (cudaGetDriverEntryPointByVersion) rather than linked, so that a binary built here
// starts on a machine with no driver at all and simply finds no device.
#include "allocator/cuda_backend.h"

#include <cudaTypedefs.h>

#include <mutex>
#include <unordered_map>

#include "allocator/cuda_device.h"
#include "allocator/cuda_events.h"
#include "common/cuda_check.h"

namespace frugal::alloc {

namespace {

// The driver entry points of the virtual memory API, found once.
struct DriverApi {
  PFN_cuMemAddressReserve_v10020 mem_address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 mem_address_free = nullptr;
  PFN_cuMemCreate_v10020 mem_create = nullptr;
  PFN_cuMemRelease_v10020 mem_release = nullptr;
  PFN_cuMemMap_v10020 mem_map = nullptr;
  PFN_cuMemUnmap_v10020 mem_unmap = nullptr;
  PFN_cuMemSetAccess_v10020 mem_set_access = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 mem_get_allocation_granularity = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  bool complete = false;

  static const DriverApi& get() {
    static const DriverApi api = [] {
      DriverApi a;
      auto find = [](const char* symbol, auto& fn) {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion(symbol, &p, 10020, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess) {
          (void)cudaGetLastError();
          return false;
        }
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        return true;
      };
      a.complete = find("cuMemAddressReserve", a.mem_address_reserve) &&
                   find("cuMemAddressFree", a.mem_address_free) &&
                   find("cuMemCreate", a.mem_create) && find("cuMemRelease", a.mem_release) &&
                   find("cuMemMap", a.mem_map) && find("cuMemUnmap", a.mem_unmap) &&
                   find("cuMemSetAccess", a.mem_set_access) &&
                   find("cuMemGetAllocationGranularity", a.mem_get_allocation_granularity) &&
                   find("cuDeviceGetAttribute", a.device_get_attribute);
      return a;
    }();
    return api;
  }
};

CUmemAllocationProp device_memory(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

struct CudaBackend::Impl {
  int device = 0;
  std::size_t total = 0;
  bool virtual_memory = false;
  std::size_t granularity = std::size_t{2} << 20;
  CudaEventPool events;
  std::mutex handles_mutex;
  // The physical allocation behind each mapped granule, by address.
  std::unordered_map<std::uintptr_t, CUmemGenericAllocationHandle> handles;

  explicit Impl(int d) : device(d), events(d) {}
};

CudaBackend::CudaBackend(int device) {
  FRUGAL_CHECK(cuda::is_available(), "CudaBackend: " + cuda::unavailable_reason());
  FRUGAL_CHECK(device >= 0 && device < cuda::device_count(),
               "CudaBackend: no CUDA device " + std::to_string(device) + " (this machine has " +
                   std::to_string(cuda::device_count()) + ")");
  impl_ = std::make_unique<Impl>(device);
  DeviceGuard guard(device);
  std::size_t free = 0;
  FRUGAL_CUDA_CHECK(cudaMemGetInfo(&free, &impl_->total));
  const DriverApi& api = DriverApi::get();
  if (api.complete) {
    int supported = 0;
    CUdevice dev = device;  // a CUdevice is the ordinal
    FRUGAL_CU_CHECK(api.device_get_attribute(
        &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    if (supported != 0) {
      const CUmemAllocationProp prop = device_memory(device);
      std::size_t g = 0;
      FRUGAL_CU_CHECK(
          api.mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
      impl_->granularity = g;
      impl_->virtual_memory = true;
    }
  }
}

CudaBackend::~CudaBackend() = default;

int CudaBackend::device() const { return impl_->device; }
std::string CudaBackend::name() const { return "cuda:" + std::to_string(impl_->device); }
std::size_t CudaBackend::total_memory() const { return impl_->total; }

std::optional<std::size_t> CudaBackend::device_free_memory() const {
  DeviceGuard guard(impl_->device);
  std::size_t free = 0, total = 0;
  FRUGAL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

void* CudaBackend::allocate(std::size_t bytes) {
  DeviceGuard guard(impl_->device);
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // out of memory is an answer, not a sticky error
    return nullptr;
  }
  FRUGAL_CUDA_CHECK(status);
  return ptr;
}

void CudaBackend::deallocate(void* ptr, std::size_t) {
  DeviceGuard guard(impl_->device);
  const cudaError_t status = cudaFree(ptr);
  if (status == cudaErrorCudartUnloading) return;  // at exit the context is already gone
  FRUGAL_CUDA_CHECK(status);
}

bool CudaBackend::supports_virtual_memory() const { return impl_->virtual_memory; }
std::size_t CudaBackend::mapping_granularity() const { return impl_->granularity; }

void* CudaBackend::reserve_address_range(std::size_t bytes) {
  FRUGAL_CHECK(impl_->virtual_memory,
               "CudaBackend: " + name() + " has no virtual memory management");
  CUdeviceptr base = 0;
  FRUGAL_CU_CHECK(DriverApi::get().mem_address_reserve(&base, bytes, impl_->granularity, 0, 0));
  return reinterpret_cast<void*>(base);
}

void CudaBackend::release_address_range(void* base, std::size_t bytes) {
  FRUGAL_CU_CHECK(DriverApi::get().mem_address_free(reinterpret_cast<CUdeviceptr>(base), bytes));
}

bool CudaBackend::map(void* addr, std::size_t bytes) {
  const DriverApi& api = DriverApi::get();
  const std::size_t g = impl_->granularity;
  FRUGAL_CHECK(bytes % g == 0 && reinterpret_cast<std::uintptr_t>(addr) % g == 0,
               "CudaBackend::map: range not aligned to the granularity");
  const auto begin = reinterpret_cast<std::uintptr_t>(addr);
  const CUmemAllocationProp prop = device_memory(impl_->device);
  std::lock_guard<std::mutex> lock(impl_->handles_mutex);
  DeviceGuard guard(impl_->device);
  for (std::size_t offset = 0; offset < bytes; offset += g) {
    CUmemGenericAllocationHandle handle{};
    const CUresult created = api.mem_create(&handle, g, &prop, 0);
    if (created != CUDA_SUCCESS) {
      // Undo this call's granules: the range is mapped whole or not at all.
      for (std::size_t done = 0; done < offset; done += g) {
        const auto it = impl_->handles.find(begin + done);
        (void)api.mem_unmap(begin + done, g);
        (void)api.mem_release(it->second);
        impl_->handles.erase(it);
      }
      if (created == CUDA_ERROR_OUT_OF_MEMORY) return false;
      FRUGAL_CU_CHECK(created);
    }
    const CUresult mapped = api.mem_map(begin + offset, g, 0, handle, 0);
    if (mapped != CUDA_SUCCESS) (void)api.mem_release(handle);
    FRUGAL_CU_CHECK(mapped);
    impl_->handles.emplace(begin + offset, handle);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  FRUGAL_CU_CHECK(api.mem_set_access(begin, bytes, &access, 1));
  return true;
}

void CudaBackend::unmap(void* addr, std::size_t bytes) {
  const DriverApi& api = DriverApi::get();
  const std::size_t g = impl_->granularity;
  const auto begin = reinterpret_cast<std::uintptr_t>(addr);
  DeviceGuard guard(impl_->device);
  FRUGAL_CUDA_CHECK(cudaDeviceSynchronize());
  std::lock_guard<std::mutex> lock(impl_->handles_mutex);
  for (std::size_t offset = 0; offset < bytes; offset += g) {
    const auto it = impl_->handles.find(begin + offset);
    FRUGAL_CHECK(it != impl_->handles.end(), "CudaBackend::unmap: a granule that is not mapped");
    FRUGAL_CU_CHECK(api.mem_unmap(begin + offset, g));
    FRUGAL_CU_CHECK(api.mem_release(it->second));
    impl_->handles.erase(it);
  }
}

EventHandle CudaBackend::record_event(StreamId stream) { return impl_->events.record(stream); }
bool CudaBackend::event_completed(EventHandle event) { return impl_->events.completed(event); }
bool CudaBackend::wait_event(EventHandle event) {
  impl_->events.wait(event);
  return true;
}
void CudaBackend::destroy_event(EventHandle event) { impl_->events.destroy(event); }

}  // namespace frugal::alloc
