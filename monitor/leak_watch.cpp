// The leak watch's growth streaks and its attribution of growth to tags (see leak_watch.h).
#include "monitor/leak_watch.h"

#include <algorithm>

#include "allocator/caching_allocator.h"
#include "common/error.h"
#include "common/format.h"
#include "common/sanitizers.h"
#include "monitor/host_memory.h"

namespace frugal::monitor {

MemorySample sample_memory(std::int64_t epoch, const alloc::CachingAllocator& allocator) {
  MemorySample s;
  s.epoch = epoch;
  s.allocated = static_cast<std::int64_t>(allocator.memory_allocated());
  s.reserved = static_cast<std::int64_t>(allocator.memory_reserved());
  s.rss = process_memory_info().rss;
  return s;
}

std::string LeakWarning::message() const {
  std::string text = "possible memory leak: " + metric + " grew in each of the last " +
                     std::to_string(epochs_growing) + " epochs, from " + format_bytes(before) +
                     " to " + format_bytes(now) + " (+" + format_bytes(now - before) +
                     ") at epoch " + std::to_string(epoch);
  if (top_growing.empty()) return text + "; no per-op attribution (no memory history attached)";
  text += "; grew most:";
  for (std::size_t i = 0; i < top_growing.size(); ++i)
    text += std::string(i ? "," : "") + " " + top_growing[i].tag + " +" +
            format_bytes(top_growing[i].growth());
  return text;
}

LeakWatch::LeakWatch(LeakWatchOptions options, TagBytesProvider provider)
    : options_(options), provider_(std::move(provider)) {
  FRUGAL_CHECK(options_.consecutive_epochs >= 1,
               "LeakWatch: consecutive_epochs must be at least 1");
  FRUGAL_CHECK(options_.min_growth_bytes >= 0 && options_.min_growth_fraction >= 0,
               "LeakWatch: growth thresholds must not be negative");
  tracks_ = {{"allocated", &MemorySample::allocated}, {"reserved", &MemorySample::reserved}};
  // Under AddressSanitizer the process RSS grows by design: freed heap memory waits in its
  // quarantine (256 MiB by default) so that a use after free is caught. Only the allocator's
  // own figures mean anything there.
  if (!kAddressSanitizer) tracks_.push_back({"rss", &MemorySample::rss});
}

bool LeakWatch::grew(std::int64_t before, std::int64_t now) const {
  const double relative =
      options_.min_growth_fraction * static_cast<double>(std::max<std::int64_t>(before, 0));
  const double threshold = std::max(static_cast<double>(options_.min_growth_bytes), relative);
  return static_cast<double>(now - before) > threshold;
}

std::vector<LeakWarning> LeakWatch::observe(const MemorySample& sample) {
  history_.push_back(sample);
  tag_history_.push_back(provider_ ? provider_() : std::map<std::string, std::int64_t>{});
  const std::size_t keep = static_cast<std::size_t>(options_.consecutive_epochs) + 1;
  while (history_.size() > keep) {
    history_.pop_front();
    tag_history_.pop_front();
  }
  std::vector<LeakWarning> now;
  if (history_.size() < 2) return now;
  const MemorySample& previous = history_[history_.size() - 2];
  for (Track& track : tracks_) {
    track.streak = grew(previous.*track.member, sample.*track.member) ? track.streak + 1 : 0;
    if (track.streak < options_.consecutive_epochs) continue;
    // The history reaches back consecutive_epochs epochs: the start of the reported window.
    const int back = options_.consecutive_epochs;
    LeakWarning w;
    w.metric = track.name;
    w.epoch = sample.epoch;
    w.epochs_growing = track.streak;
    w.before = history_[history_.size() - 1 - back].*track.member;
    w.now = sample.*track.member;
    w.top_growing = top_growing(back);
    now.push_back(w);
  }
  warnings_.insert(warnings_.end(), now.begin(), now.end());
  return now;
}

std::vector<TagGrowth> LeakWatch::top_growing(int epochs_back) const {
  const auto& before =
      tag_history_[tag_history_.size() - 1 - static_cast<std::size_t>(epochs_back)];
  const auto& now = tag_history_.back();
  std::vector<TagGrowth> growth;
  for (const auto& [tag, bytes] : now) {
    const auto it = before.find(tag);
    const std::int64_t was = it == before.end() ? 0 : it->second;
    if (bytes > was) growth.push_back({tag, was, bytes});
  }
  std::sort(growth.begin(), growth.end(), [](const TagGrowth& a, const TagGrowth& b) {
    return a.growth() != b.growth() ? a.growth() > b.growth() : a.tag < b.tag;
  });
  if (growth.size() > options_.top_tags) growth.resize(options_.top_tags);
  return growth;
}

}  // namespace frugal::monitor
