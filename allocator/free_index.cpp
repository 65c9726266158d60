// Exact best-fit search over free blocks: the cold paths (a search that finds nothing in
// the bitmaps, huge blocks, the largest block) and the lazily mapped tables.
#include "allocator/free_index.h"

#include <sys/mman.h>

#include <new>

namespace frugal::alloc {

namespace {

constexpr std::size_t kWords = FreeIndex::kFlatSizes / 64;
// Bits strictly above position i of a word.
constexpr std::uint64_t above(std::size_t i) {
  return (i & 63) == 63 ? 0 : ~std::uint64_t{0} << ((i & 63) + 1);
}

// Zero-filled memory whose pages cost nothing until touched.
void* map_zeroed(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

}  // namespace

FreeIndex::FreeIndex()
    : heads_(static_cast<Block**>(map_zeroed(kFlatSizes * sizeof(Block*)))),
      words_(static_cast<std::uint64_t*>(map_zeroed(kWords * sizeof(std::uint64_t)))) {}

FreeIndex::~FreeIndex() {
  munmap(heads_, kFlatSizes * sizeof(Block*));
  munmap(words_, kWords * sizeof(std::uint64_t));
}

Block* FreeIndex::best_fit_slow(std::size_t key) const {
  Block* const table = table_best_fit_slow(key);
  // The front block is never huge: when it fits, it is smaller than any huge block, and
  // the bitmaps hold nothing that fits (that is how the search got here).
  if (front_ != nullptr && front_key_ >= key &&
      (table == nullptr || front_key_ <= table->size / kUnitBytes)) {
    return front_;
  }
  return table;
}

Block* FreeIndex::table_best_fit_slow(std::size_t key) const {
  if (key >= kFlatSizes) {
    const auto it = huge_.lower_bound({key * kUnitBytes, nullptr});
    return it == huge_.end() ? nullptr : it->second;
  }
  // Nothing in key's own word: the next non-empty word, through the summary levels.
  const std::size_t w = key / 64;
  std::size_t next_word;
  if (const std::uint64_t m = summary_[w / 64] & above(w)) {
    next_word = (w / 64) * 64 + std::countr_zero(m);
  } else if (const std::uint64_t t = top_ & above(w / 64)) {
    const std::size_t s = std::countr_zero(t);
    next_word = s * 64 + std::countr_zero(summary_[s]);
  } else {
    return huge_.empty() ? nullptr : huge_.begin()->second;
  }
  return heads_[next_word * 64 + std::countr_zero(words_[next_word])];
}

void FreeIndex::insert_huge(Block* block) {
  block->link_next = nullptr;
  huge_.emplace(block->size, block);
}

void FreeIndex::erase_huge(Block* block) { huge_.erase({block->size, block}); }

std::size_t FreeIndex::count() const {
  std::size_t n = huge_.size() + (front_ != nullptr);
  for (std::size_t w = 0; w < kWords; ++w) {
    for (std::uint64_t m = words_[w]; m != 0; m &= m - 1) {
      for (const Block* b = heads_[w * 64 + std::countr_zero(m)]; b != nullptr; b = b->link_next)
        ++n;
    }
  }
  return n;
}

std::size_t FreeIndex::bytes() const {
  std::size_t total = front_ != nullptr ? front_->size : 0;
  for (const auto& [size, block] : huge_) total += size;
  for (std::size_t w = 0; w < kWords; ++w) {
    for (std::uint64_t m = words_[w]; m != 0; m &= m - 1) {
      for (const Block* b = heads_[w * 64 + std::countr_zero(m)]; b != nullptr; b = b->link_next) {
        total += b->size;
      }
    }
  }
  return total;
}

Block* FreeIndex::largest() const {
  if (!huge_.empty()) return huge_.rbegin()->second;
  if (top_ == 0) return front_;
  const std::size_t s = 63 - std::countl_zero(top_);
  const std::size_t w = s * 64 + 63 - std::countl_zero(summary_[s]);
  Block* const table = heads_[w * 64 + 63 - std::countl_zero(words_[w])];
  return front_ != nullptr && front_->size > table->size ? front_ : table;
}

}  // namespace frugal::alloc
