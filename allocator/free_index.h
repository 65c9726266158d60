// The set of cached free blocks of one pool and stream, searched by exact best fit in a
// few word operations. Sizes (in 512-byte units) are keys of a 64-ary radix tree of
// bitmaps; a leaf holds one list of blocks per exact size. "The smallest size >= n" is a
// walk down the tree with one count-trailing-zeros per level: no scan, whatever the number
// of free blocks. Blocks of equal size are taken most-recently-freed first (warm caches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "allocator/block.h"

namespace frugal::alloc {

class FreeIndex {
 public:
  static constexpr int kLevels = 5;                 // 30 bits of units: blocks < 512 GiB
  static constexpr std::size_t kUnitBytes = 512;
  static constexpr std::size_t kMaxBlockBytes = (std::size_t{1} << (6 * kLevels)) * kUnitBytes;

  FreeIndex();
  ~FreeIndex();
  FreeIndex(const FreeIndex&) = delete;
  FreeIndex& operator=(const FreeIndex&) = delete;

  void insert(Block* block);
  void erase(Block* block);
  // The most recently freed block of the smallest size >= bytes, or nullptr.
  Block* best_fit(std::size_t bytes) const;
  // A block of the largest size, or nullptr.
  Block* largest() const;
  bool empty() const { return count_ == 0; }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Node {
    std::uint64_t bits = 0;  // bit i: child i (inner) or list i (leaf) is non-empty
    void* child[64] = {};    // Node* (inner) or Block* list head (leaf)
  };
  static int digit(std::uint64_t key, int level) {
    return static_cast<int>((key >> (6 * (kLevels - 1 - level))) & 63);
  }
  Node* new_node();

  std::vector<std::unique_ptr<Node>> nodes_;  // owns every node; declared before root_
  Node* root_;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace frugal::alloc
