// The caching allocator: blocks carved from device segments, cached on free and reused
// without a device call, with PyTorch's pools, stream semantics, statistics and tunables.
// It is device-agnostic — a Backend supplies memory and events — so every policy here is
// tested on the CPU against a simulated device.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/backend.h"
#include "allocator/config.h"
#include "allocator/history.h"
#include "allocator/live_stats.h"
#include "allocator/out_of_memory_error.h"
#include "allocator/spin_mutex.h"
#include "allocator/stats.h"

namespace frugal::alloc {

struct Block;
struct Segment;
class FreeIndex;

// What allocate() hands out: the memory, and the handle that gives it back.
struct Allocation {
  void* ptr = nullptr;
  Block* block = nullptr;
  std::size_t size = 0;  // bytes asked for
  explicit operator bool() const { return block != nullptr; }
};

// Sees every allocation and free, in order, under the allocator's lock (traces, history).
class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  virtual void on_allocate(std::uint64_t id, std::size_t bytes, StreamId stream) = 0;
  virtual void on_free(std::uint64_t id) = 0;
};

// A read-only picture of one segment, for tests, reports and the segment map.
struct SegmentInfo {
  std::uintptr_t address = 0;
  std::size_t size = 0;    // address space
  std::size_t mapped = 0;  // bytes with memory behind them
  PoolKind pool = PoolKind::kLarge;
  StreamId stream = 0;
  bool expandable = false;
  struct BlockInfo {
    std::uintptr_t address;
    std::size_t size;
    std::size_t requested;
    bool allocated;
    bool mapped;
    bool pending;                   // freed but waiting for other streams
    HistoryTag op = 0, module = 0;  // who allocated it (while the history records)
  };
  std::vector<BlockInfo> blocks;
};

class CachingAllocator {
 public:
  // Sizes round up to multiples of this; requests up to kSmallSize use the small pool.
  static constexpr std::size_t kMinBlockSize = 512;
  static constexpr std::size_t kSmallSize = std::size_t{1} << 20;
  static constexpr std::size_t kSmallBuffer = std::size_t{2} << 20;   // small-pool segment
  static constexpr std::size_t kLargeBuffer = std::size_t{20} << 20;  // mid-size segment
  static constexpr std::size_t kMinLargeAlloc = std::size_t{10} << 20;
  static constexpr std::size_t kRoundLarge = std::size_t{2} << 20;

  explicit CachingAllocator(std::shared_ptr<Backend> backend,
                            AllocatorConfig config = AllocatorConfig::from_environment());
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` on `stream`. Throws OutOfMemoryError when the device cannot
  // provide it even after the cache was released. Zero bytes gives an empty Allocation.
  Allocation allocate(std::size_t bytes, StreamId stream = 0);
  // Gives the block back to the cache. If other streams used it (record_stream), it becomes
  // reusable only once events recorded on those streams complete.
  void free(const Allocation& allocation);
  // Marks that `stream` uses the block, so a free waits for that stream's work.
  void record_stream(const Allocation& allocation, StreamId stream);

  // Returns every wholly free segment (and every free mapped page of expandable segments)
  // to the device.
  void empty_cache();

  // Caps the memory reserved from the device (0 = no cap beyond the device itself).
  void set_memory_limit(std::size_t bytes);
  void set_memory_fraction(double fraction);
  std::size_t memory_limit() const;  // effective cap in bytes

  DeviceStats stats() const;
  std::size_t memory_allocated() const;
  std::size_t memory_reserved() const;
  void reset_peak_memory_stats();
  void reset_accumulated_memory_stats();
  // PyTorch's memory_summary() table.
  std::string memory_summary(bool abbreviated = false) const;
  std::vector<SegmentInfo> snapshot() const;
  // What an OutOfMemoryError would report now for a request of `bytes`.
  MemoryReport memory_report(std::size_t bytes = 0) const;

  void set_observer(AllocationObserver* observer);

  // Memory history (torch.cuda.memory._record_memory_history): keeps the newest
  // `max_entries` events (rounded up to a power of two, 32 bytes each); 0 stops recording
  // and drops them.
  void record_history(std::size_t max_entries);
  bool history_enabled() const;
  // For an op that names itself after allocating its output (autograd records the node
  // after the forward ran): names `op` as the op that allocated this block, when the
  // allocation is among the last few recorded events and names no op yet. Costs one
  // relaxed load when the history is off.
  void name_allocation_op(const Allocation& allocation, std::string_view op);
  // The segments and blocks now, and the kept events, read together under the lock.
  struct Snapshot {
    std::string device;
    std::vector<SegmentInfo> segments;
    std::vector<HistoryEvent> events;   // oldest first, times in ns since recording began
    std::uint64_t events_recorded = 0;  // including those the ring no longer holds
    std::size_t history_capacity = 0;   // 0: the history is off
    std::size_t allocated = 0, reserved = 0;
  };
  Snapshot memory_snapshot() const;
  Backend& backend() { return *backend_; }
  const AllocatorConfig& config() const { return config_; }

  // Size rounding, exposed for tests and trace tools.
  std::size_t round_size(std::size_t bytes) const {
    if (roundup_enabled_) [[unlikely]]
      return round_size_with_divisions(bytes);
    return bytes < kMinBlockSize ? kMinBlockSize
                                 : (bytes + kMinBlockSize - 1) & ~(kMinBlockSize - 1);
  }

 private:
  struct StreamPool;
  struct Pool;

  // All private members run with mutex_ held.
  std::size_t round_size_with_divisions(std::size_t bytes) const;
  StreamPool& stream_pool(PoolKind kind, StreamId stream);
  StreamPool& find_stream_pool(Pool& pool, PoolKind kind, StreamId stream);
  Block* find_cached_block(StreamPool& sp, std::size_t size);
  Block* obtain_block(StreamPool& sp, std::size_t size, std::size_t requested);
  Block* new_segment(StreamPool& sp, std::size_t size);
  Block* grow_expandable(StreamPool& sp, std::size_t size);
  Segment* new_expandable_range(StreamPool& sp, std::size_t size);
  Block* unmap_block_pages(Block* block, std::size_t* released);
  Block* split_off_after(Block* block, std::uintptr_t at);
  void note_mapped(Segment* seg, std::uintptr_t address, std::size_t bytes);
  void note_unmapped(Segment* seg, std::uintptr_t address, std::size_t bytes);
  void take_block(Block* block, std::size_t size, std::size_t requested);
  // Non-releasable blocks and 512-byte units that left the stats on the way to an
  // index_insert, which applies them with its own change in one update.
  struct Unindexed {
    std::int64_t blocks;
    std::int64_t units;
  };
  // Merges with free neighbours and indexes; `released_bytes` and `released_requested`
  // are the free's own change to the stats (0 for a block whose free was counted when it
  // was requested), applied in the same update.
  void cache_block(Block* block, std::int64_t released_bytes, std::int64_t released_requested);
  Block* merge_free_neighbours(Block* block, Unindexed& removed);
  std::size_t non_releasable_bytes(const Block* block) const;
  std::int64_t max_split_size_stat() const;
  [[noreturn, gnu::cold, gnu::noinline]] void throw_out_of_memory(std::size_t requested);
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_not_allocated(const Block* block);
  [[gnu::noinline]] void notify_allocate(Block* block, std::size_t bytes, StreamId stream);
  void note_history(HistoryAction action, std::uintptr_t address, std::uint64_t size,
                    StreamId stream, PoolKind pool, HistoryTag op, HistoryTag module);
  void note_block_history(HistoryAction action, const Block* block, bool counted_before = false);

  void index_insert(Block* block, Unindexed removed = {});
  std::size_t index_insert_uncounted(Block* block);
  void index_erase(Block* block);
  void unindex(Block* block, Unindexed& removed);
  void note_non_releasable(PoolKind kind, Unindexed removed, std::size_t added_bytes);
  void process_events(bool wait);
  std::size_t release_cached(bool wait_for_events);
  std::size_t release_segment_if_free(Segment* seg);
  std::size_t unmap_free_pages(Segment* seg);
  void garbage_collect(std::size_t needed);
  bool within_limit(std::size_t extra) const;
  std::size_t memory_limit_locked() const;
  std::size_t segment_size_for(std::size_t size) const;
  std::size_t largest_free_block_locked() const;
  MemoryReport report_locked(std::size_t bytes) const;
  std::vector<SegmentInfo> snapshot_locked() const;
  void link_segment(Segment* seg);
  void unlink_segment(Segment* seg);
  Block* new_block();
  void add_spare_blocks();
  void delete_block(Block* block);

  std::shared_ptr<Backend> backend_;
  AllocatorConfig config_;
  mutable SpinMutex mutex_;
  std::unique_ptr<Pool> pools_[2];
  // Per pool kind, the stream pool used last: most lookups repeat it (one read, no search).
  StreamPool* last_used_[2] = {nullptr, nullptr};
  Segment* segments_ = nullptr;
  LiveStats live_;                // running counters, published by stats()
  std::size_t granularity_ = 0;   // the backend's mapping granularity
  bool roundup_enabled_ = false;  // any roundup_power2_divisions configured
  bool poison_ = false;           // poison free host bytes (an AddressSanitizer build)
  std::size_t limit_ = 0;         // 0: the device's total memory
  std::uint64_t tick_ = 0;
  std::uint64_t next_trace_id_ = 0;
  AllocationObserver* observer_ = nullptr;
  std::unique_ptr<MemoryHistory> history_;  // null: not recording
  std::atomic<bool> history_on_{false};     // history_ != nullptr, readable without the lock
  struct PendingFree {
    EventHandle event;
    Block* block;
  };
  std::vector<PendingFree> pending_;
  Block* spare_blocks_ = nullptr;
  std::vector<std::unique_ptr<Block[]>> block_chunks_;
};

}  // namespace frugal::alloc
