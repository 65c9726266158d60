// The set of cached free blocks of one pool and stream, searched by exact best fit in a
// few word operations. For sizes (in 512-byte units) below 128 MiB, three levels of
// occupancy bitmaps (32 KiB, 512 B, one word) find "the smallest size >= n" with at most
// three count-trailing-zeros — no scan, whatever the number of free blocks — and a table
// indexed by size holds each size's list head (its pages are touched only for sizes that
// occur). Blocks of equal size are taken most-recently-freed first (warm in cache). Rare
// huge blocks live in an ordered set. The hot operations are inline: they run on every
// allocation and free.
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

  void insert(Block* block) {
    const std::size_t key = block->size / kUnitBytes;
    ++count_;
    bytes_ += block->size;
    block->link_prev = nullptr;
    if (key >= kFlatSizes) [[unlikely]] {
      insert_huge(block);
      return;
    }
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
    block->link_next = nullptr;
    heads_[key] = block;
    words_[key / 64] = word | bit(key);
    summary_[key / 4096] |= bit(key / 64);
    top_ |= bit(key / 4096);
  }

  void erase(Block* block) {
    const std::size_t key = block->size / kUnitBytes;
    --count_;
    bytes_ -= block->size;
    if (key >= kFlatSizes) [[unlikely]] {
      erase_huge(block);
      return;
    }
    if (block->link_next != nullptr) block->link_next->link_prev = block->link_prev;
    if (block->link_prev != nullptr) {
      block->link_prev->link_next = block->link_next;
    } else if ((heads_[key] = block->link_next) == nullptr) {
      // The last block of this size: clear occupancy upwards while words become empty.
      if ((words_[key / 64] &= ~bit(key)) == 0 &&
          (summary_[key / 4096] &= ~bit(key / 64)) == 0) {
        top_ &= ~bit(key / 4096);
      }
    }
    block->link_prev = block->link_next = nullptr;
  }

  // The most recently freed block of the smallest size >= bytes, or nullptr.
  Block* best_fit(std::size_t bytes) const {
    const std::size_t key = (bytes + kUnitBytes - 1) / kUnitBytes;
    if (key < kFlatSizes) [[likely]] {
      // A size in key's own word of 64 sizes, else the next word in its group of 64 words.
      const std::size_t w = key / 64;
      if (const std::uint64_t m = words_[w] & (~std::uint64_t{0} << (key & 63))) {
        return heads_[w * 64 + std::countr_zero(m)];
      }
      if ((w & 63) != 63) {
        if (const std::uint64_t m = summary_[w / 64] & (~std::uint64_t{0} << ((w & 63) + 1))) {
          const std::size_t next = (w & ~std::size_t{63}) + std::countr_zero(m);
          return heads_[next * 64 + std::countr_zero(words_[next])];
        }
      }
    }
    return best_fit_slow(key);
  }

  // A block of the largest size, or nullptr.
  Block* largest() const;
  bool empty() const { return count_ == 0; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return bytes_; }

 private:
  static constexpr std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << (i & 63); }
  Block* best_fit_slow(std::size_t key) const;
  void insert_huge(Block* block);
  void erase_huge(Block* block);

  Block** heads_;                 // heads_[k]: free blocks of exactly k units, via link_*
  std::uint64_t* words_;          // bit k: heads_[k] non-empty        (kFlatSizes bits)
  std::uint64_t summary_[64]{};   // bit w: words_[w] non-zero          (4096 bits)
  std::uint64_t top_ = 0;         // bit s: summary_[s] non-zero        (64 bits)
  std::set<std::pair<std::size_t, Block*>> huge_;  // blocks of 128 MiB and more
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace frugal::alloc
