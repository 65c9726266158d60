// The set of cached free blocks of one pool and stream, searched by exact best fit in a
// few word operations. For sizes (in 512-byte units) below 128 MiB, three levels of
// occupancy bitmaps (32 KiB, 512 B, one word) find "the smallest size >= n" with at most
// three count-trailing-zeros — no scan, whatever the number of free blocks — and a table
// indexed by size holds each size's list head (its pages are touched only for sizes that
// occur). Blocks of equal size are taken most-recently-freed first (warm in cache). Rare
// huge blocks live in an ordered set. The most recently inserted block waits in a front
// slot before it enters the tables (see insert). The hot operations are inline: they run
// on every allocation and free.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>

#include "allocator/block.h"

namespace frugal::alloc {

class FreeIndex {
 public:
  static constexpr std::size_t kUnitBytes = 512;
  static constexpr int kFlatBits = 18;  // sizes < 2^18 units (128 MiB) use the flat table
  static constexpr std::size_t kFlatSizes = std::size_t{1} << kFlatBits;

  FreeIndex();
  ~FreeIndex();
  FreeIndex(const FreeIndex&) = delete;
  FreeIndex& operator=(const FreeIndex&) = delete;

  // The newest block goes to the front slot, and the block it displaces into the tables.
  // Most inserts are the remainder of a split whose allocation is freed soon after, and
  // then merges the remainder back: in the slot, the remainder's size never touches the
  // bitmaps or the large head table (a random entry, usually a cache miss). Equal sizes
  // still come back newest first: the slot holds the newest block of all.
  void insert(Block* block) {
    const std::size_t key = block->size / kUnitBytes;
    block->link_prev = block->link_next = nullptr;
    if (key >= kFlatSizes) [[unlikely]] {
      insert_huge(block);
      return;
    }
    Block* const displaced = front_;
    front_ = block;
    front_key_ = key;
    if (displaced != nullptr) insert_table(displaced, displaced->size / kUnitBytes);
  }

  void erase(Block* block) {
    if (block == front_) {
      front_ = nullptr;
      front_key_ = kNoFront;
      return;
    }
    erase_table(block);
  }

  // The most recently freed block of the smallest size >= bytes, or nullptr.
  Block* best_fit(std::size_t bytes) const {
    const std::size_t key = (bytes + kUnitBytes - 1) / kUnitBytes;
    // A split of whatever this finds will displace the front block into the tables: fetch
    // its lines of the head table and bitmap now, while the search runs, instead of when
    // the insert needs them (an empty slot's key maps to an unused, harmless line).
    const std::size_t front_key = front_key_ & (kFlatSizes - 1);
    __builtin_prefetch(&heads_[front_key], 1);
    __builtin_prefetch(&words_[front_key / 64], 1);
    if (key < kFlatSizes) [[likely]] {
      // The fit is in key's own word of 64 sizes, or in the next non-empty word of its
      // group of 64 words, or in the first non-empty word of the next non-empty group. All
      // three are computed and one is chosen without a branch: which one holds the fit
      // depends on the sizes in use and is unpredictable, and a mispredicted branch costs
      // more than the few extra reads, which hit the cache.
      const std::size_t w = key / 64, g = w / 64;
      const std::uint64_t in_word = words_[w] & (~std::uint64_t{0} << (key & 63));
      // Bits strictly above a position (a double shift: shifting by 64 is undefined).
      const std::uint64_t in_group = summary_[g] & ((~std::uint64_t{0} << (w & 63)) << 1);
      const std::uint64_t groups = top_ & ((~std::uint64_t{0} << g) << 1);
      if ((in_word | in_group | groups) != 0) [[likely]] {
        // An empty mask gives an index one past its level; masking keeps that unused read
        // in bounds.
        const std::size_t next_in_group = g * 64 + std::countr_zero(in_group);
        const std::size_t next_group = std::countr_zero(groups) & 63;
        const std::size_t first_of_group = next_group * 64 + std::countr_zero(summary_[next_group]);
        const std::size_t next = choose(in_group != 0, next_in_group, first_of_group);
        const std::uint64_t next_word = words_[next & (kFlatSizes / 64 - 1)];
        const std::size_t found = choose(in_word != 0, w * 64 + std::countr_zero(in_word),
                                         next * 64 + std::countr_zero(next_word));
        // The front block wins when it fits and is no larger (at equal size it is newer).
        // Unsigned wrap-around makes one comparison of "key <= front_key_ <= found".
        const bool front = front_key_ - key <= found - key;
        return reinterpret_cast<Block*>(choose(front, reinterpret_cast<std::uintptr_t>(front_),
                                               reinterpret_cast<std::uintptr_t>(heads_[found])));
      }
    }
    return best_fit_slow(key);
  }

  // A block of the largest size, or nullptr.
  Block* largest() const;
  // The number of free blocks and their bytes, counted by walking the index (for tests and
  // reports: keeping running totals would cost every insert and erase).
  std::size_t count() const;
  std::size_t bytes() const;

 private:
  static constexpr std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << (i & 63); }
  // c ? a : b without a jump. The compiler compiles a plain ?: here as a branch, and these
  // conditions depend on the sizes in use: mispredicted often, each costing more than the
  // whole selection.
  static constexpr std::size_t choose(bool c, std::size_t a, std::size_t b) {
    const std::size_t mask = std::size_t{0} - c;
    return (a & mask) | (b & ~mask);
  }
  Block* best_fit_slow(std::size_t key) const;
  Block* table_best_fit_slow(std::size_t key) const;
  void insert_huge(Block* block);
  void erase_huge(Block* block);

  void insert_table(Block* block, std::size_t key) {
    // The bitmap, small and usually cached, says whether the size's list is empty. Only a
    // non-empty list's head is read from the large table (a likely cache miss, which
    // stalls); storing a new head does not stall.
    const std::uint64_t word = words_[key / 64];
    if (word & bit(key)) {
      Block* head = heads_[key];
      block->link_next = head;
      head->link_prev = block;
      heads_[key] = block;
      return;
    }
    heads_[key] = block;
    words_[key / 64] = word | bit(key);
    summary_[key / 4096] |= bit(key / 64);
    top_ |= bit(key / 4096);
  }

  void erase_table(Block* block) {
    const std::size_t key = block->size / kUnitBytes;
    if (key >= kFlatSizes) [[unlikely]] {
      erase_huge(block);
      return;
    }
    Block* const prev = block->link_prev;
    Block* const next = block->link_next;
    if (next != nullptr) next->link_prev = prev;
    if (prev != nullptr) [[unlikely]] {
      prev->link_next = next;
    } else {
      heads_[key] = next;
      // Clears occupancy upwards while levels become empty — without branches: whether a
      // list, word or summary empties depends on the sizes in use and is unpredictable.
      const std::uint64_t word = words_[key / 64] & ~(std::uint64_t{next == nullptr} << (key & 63));
      words_[key / 64] = word;
      const std::uint64_t group =
          summary_[key / 4096] & ~(std::uint64_t{word == 0} << (key / 64 & 63));
      summary_[key / 4096] = group;
      top_ &= ~(std::uint64_t{group == 0} << (key / 4096));
    }
    block->link_prev = block->link_next = nullptr;
  }

  static constexpr std::size_t kNoFront = ~std::size_t{0};

  Block** heads_;                // heads_[k]: free blocks of exactly k units, via link_*
  std::uint64_t* words_;         // bit k: heads_[k] non-empty        (kFlatSizes bits)
  std::uint64_t summary_[64]{};  // bit w: words_[w] non-zero          (4096 bits)
  std::uint64_t top_ = 0;        // bit s: summary_[s] non-zero        (64 bits)
  std::set<std::pair<std::size_t, Block*>> huge_;  // blocks of 128 MiB and more
  Block* front_ = nullptr;                         // the newest block, in none of the tables above
  std::size_t front_key_ = kNoFront;  // its size in units (kNoFront: the slot is empty)
};

}  // namespace frugal::alloc
