// The leak watch: fed one memory sample per epoch (allocator allocated and reserved bytes,
// host RSS), it warns when one of them has grown over N consecutive epochs by more than a
// noise threshold each time, and names the ops or modules whose live bytes grew most.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace frugal::alloc {
class CachingAllocator;
}

namespace frugal::monitor {

// One epoch's memory. Bytes.
struct MemorySample {
  std::int64_t epoch = 0;
  std::int64_t allocated = 0;  // the allocator's allocated_bytes.all.current
  std::int64_t reserved = 0;   // reserved_bytes.all.current
  std::int64_t rss = 0;        // host resident set
};

// The sample now: `allocator`'s current bytes and this process's RSS.
MemorySample sample_memory(std::int64_t epoch, const alloc::CachingAllocator& allocator);

// Live bytes per op or module ("conv1", "optimizer.state", ...), as the allocator's memory
// history attributes them; called once per observed epoch.
using TagBytesProvider = std::function<std::map<std::string, std::int64_t>()>;

struct LeakWatchOptions {
  // Consecutive growing epochs before a warning. With a baseline sample taken before the
  // first epoch, a steady leak is reported at the end of epoch 3; the first epoch's warm-up
  // growth (optimizer state, caches) alone never is.
  int consecutive_epochs = 3;
  // A step counts as growth only above both thresholds: max(bytes, fraction x previous).
  std::int64_t min_growth_bytes = std::int64_t{1} << 20;
  double min_growth_fraction = 0.01;
  // How many growing tags a warning names.
  std::size_t top_tags = 3;
};

struct TagGrowth {
  std::string tag;
  std::int64_t before = 0, now = 0;
  std::int64_t growth() const { return now - before; }
};

struct LeakWarning {
  std::string metric;  // "allocated", "reserved" or "rss"
  std::int64_t epoch = 0;
  int epochs_growing = 0;
  std::int64_t before = 0, now = 0;    // the metric when the growth began, and now
  std::vector<TagGrowth> top_growing;  // largest growth first; empty without a provider
  std::string message() const;
};

class LeakWatch {
 public:
  explicit LeakWatch(LeakWatchOptions options = {}, TagBytesProvider provider = {});
  void set_tag_provider(TagBytesProvider provider) { provider_ = std::move(provider); }

  // Records an epoch. Returns a warning for each metric that has now grown over at least
  // `consecutive_epochs` epochs in a row (again every epoch while it keeps growing).
  std::vector<LeakWarning> observe(const MemorySample& sample);
  // Every warning given so far.
  const std::vector<LeakWarning>& warnings() const { return warnings_; }
  const LeakWatchOptions& options() const { return options_; }

 private:
  struct Track {
    const char* name;
    std::int64_t MemorySample::*member;
    int streak = 0;
  };
  bool grew(std::int64_t before, std::int64_t now) const;
  std::vector<TagGrowth> top_growing(int epochs_back) const;

  LeakWatchOptions options_;
  TagBytesProvider provider_;
  std::vector<Track> tracks_;
  // The last consecutive_epochs + 1 samples and their tag snapshots, oldest first.
  std::deque<MemorySample> history_;
  std::deque<std::map<std::string, std::int64_t>> tag_history_;
  std::vector<LeakWarning> warnings_;
};

}  // namespace frugal::monitor
