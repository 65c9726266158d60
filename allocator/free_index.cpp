// Exact best-fit search over free blocks: a radix tree of 64-bit occupancy bitmaps.
#include "allocator/free_index.h"

#include <bit>

#include "common/error.h"

namespace frugal::alloc {

FreeIndex::FreeIndex() : root_(new_node()) {}
FreeIndex::~FreeIndex() = default;

FreeIndex::Node* FreeIndex::new_node() {
  nodes_.push_back(std::make_unique<Node>());
  return nodes_.back().get();
}

void FreeIndex::insert(Block* block) {
  FRUGAL_CHECK(block->size < kMaxBlockBytes,
               "FreeIndex: a block of " + std::to_string(block->size) + " bytes is too large");
  const std::uint64_t key = block->size / kUnitBytes;
  Node* node = root_;
  for (int level = 0; level < kLevels - 1; ++level) {
    const int d = digit(key, level);
    node->bits |= std::uint64_t{1} << d;
    if (node->child[d] == nullptr) node->child[d] = new_node();
    node = static_cast<Node*>(node->child[d]);
  }
  const int d = digit(key, kLevels - 1);
  node->bits |= std::uint64_t{1} << d;
  Block* head = static_cast<Block*>(node->child[d]);
  block->link_prev = nullptr;
  block->link_next = head;
  if (head != nullptr) head->link_prev = block;
  node->child[d] = block;
  ++count_;
  bytes_ += block->size;
}

void FreeIndex::erase(Block* block) {
  const std::uint64_t key = block->size / kUnitBytes;
  Node* path[kLevels];
  Node* node = root_;
  for (int level = 0; level < kLevels - 1; ++level) {
    path[level] = node;
    node = static_cast<Node*>(node->child[digit(key, level)]);
  }
  path[kLevels - 1] = node;
  const int leaf_digit = digit(key, kLevels - 1);
  if (block->link_prev != nullptr) {
    block->link_prev->link_next = block->link_next;
  } else {
    node->child[leaf_digit] = block->link_next;
  }
  if (block->link_next != nullptr) block->link_next->link_prev = block->link_prev;
  block->link_prev = block->link_next = nullptr;
  --count_;
  bytes_ -= block->size;
  // Clear occupancy bits upwards while lists/subtrees become empty.
  if (node->child[leaf_digit] != nullptr) return;
  for (int level = kLevels - 1; level >= 0; --level) {
    path[level]->bits &= ~(std::uint64_t{1} << digit(key, level));
    if (path[level]->bits != 0) return;
  }
}

Block* FreeIndex::best_fit(std::size_t bytes) const {
  const std::uint64_t key = (bytes + kUnitBytes - 1) / kUnitBytes;
  if (key >= (std::uint64_t{1} << (6 * kLevels))) return nullptr;
  // Walk down along `key`, remembering the deepest level with a larger sibling subtree.
  const Node* node = root_;
  const Node* fallback = nullptr;
  int fallback_level = 0;
  for (int level = 0; level < kLevels; ++level) {
    const int d = digit(key, level);
    const std::uint64_t larger = d == 63 ? 0 : node->bits & (~std::uint64_t{0} << (d + 1));
    if (larger != 0) {
      fallback = node;
      fallback_level = level;
    }
    if (!(node->bits >> d & 1)) break;
    if (level == kLevels - 1) return static_cast<Block*>(node->child[d]);  // exact size
    node = static_cast<const Node*>(node->child[d]);
  }
  if (fallback == nullptr) return nullptr;
  // Smallest key in the nearest larger subtree: lowest set bit at every level below.
  const int d = digit(key, fallback_level);
  const std::uint64_t larger = fallback->bits & (~std::uint64_t{0} << (d + 1));
  int next = std::countr_zero(larger);
  node = fallback;
  for (int level = fallback_level; level < kLevels - 1; ++level) {
    node = static_cast<const Node*>(node->child[next]);
    next = std::countr_zero(node->bits);
  }
  return static_cast<Block*>(node->child[next]);
}

Block* FreeIndex::largest() const {
  if (count_ == 0) return nullptr;
  const Node* node = root_;
  for (int level = 0; level < kLevels - 1; ++level) {
    node = static_cast<const Node*>(node->child[63 - std::countl_zero(node->bits)]);
  }
  return static_cast<Block*>(node->child[63 - std::countl_zero(node->bits)]);
}

}  // namespace frugal::alloc
