// frugal-memlab empty-cache: the caching allocator keeps freed blocks for the next request;
// empty_cache() gives wholly free segments back to the system. The table shows reserved
// bytes before and after, and what the next allocation of the same size then costs: a new
// segment from the system (and its first-touch page faults) instead of a cached block.
#include <algorithm>

#include "allocator/default_allocators.h"
#include "examples/memlab/lab.h"
#include "examples/memlab/subcommands.h"

namespace frugal::memlab {
namespace {

struct Cost {
  double allocate_us = 0, fill_us = 0;  // medians
  std::int64_t new_segments = 0;        // over all repeats
};

// `repeats` times: (optionally empty the cache), allocate `numel` floats, write them, free.
Cost allocation_cost(std::int64_t numel, int repeats, bool empty_first) {
  auto& allocator = alloc::cpu_allocator();
  std::vector<double> allocate, fill;
  Cost c;
  for (int r = 0; r < repeats; ++r) {
    if (empty_first) allocator.empty_cache();
    const std::int64_t segments = allocator.stats().num_device_alloc;
    const double t0 = seconds_now();
    Tensor t = empty({numel});
    const double t1 = seconds_now();
    t.fill_(1.0f);  // first touch: a new segment's pages fault in here
    const double t2 = seconds_now();
    c.new_segments += allocator.stats().num_device_alloc - segments;
    allocate.push_back((t1 - t0) * 1e6);
    fill.push_back((t2 - t0) * 1e6);
  }
  c.allocate_us = median(allocate);
  c.fill_us = median(fill);
  return c;
}

}  // namespace

int empty_cache_lab(int argc, char** argv) {
  CommandLine cli(
      argv[0],
      "Reserved and allocated bytes after a training step, before and after empty_cache(),\n"
      "then the time of allocating (and writing) a tensor of --mib from the cache, against\n"
      "the same right after empty_cache() (a new segment each time); medians over --repeats.");
  cli.option("model", "NAME", "the model whose training step fills the cache", "cnn");
  cli.option("batch-size", "N", "batch of that step", "64");
  cli.option("mib", "MIB", "size of the tensor allocated afterwards", "64");
  cli.option("repeats", "N", "allocations timed each way", "7");
  add_common_options(cli);
  if (!cli.parse(argc, argv)) return 0;
  apply_common_options(cli);
  const double t0 = seconds_now();
  const std::int64_t batch = cli.get_int("batch-size");
  const int repeats = static_cast<int>(cli.get_int("repeats"));
  const double size_mib = cli.get_double("mib");
  FRUGAL_CHECK(batch >= 1 && repeats >= 1 && size_mib > 0,
               "--batch-size, --repeats and --mib must be positive");
  const auto numel = static_cast<std::int64_t>(size_mib * 1024 * 1024 / 4);
  auto& allocator = alloc::cpu_allocator();

  manual_seed(0);
  auto model = nn::make_model(cli.get("model"));
  {
    optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    Tensor loss = cross_entropy(model->forward(randn({batch, 1, 28, 28})), randint(0, 10, {batch}));
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    // the step's activations are freed here; the model's weights and gradients stay
  }
  const std::int64_t allocated_before = allocated_now(), reserved_before = reserved_now();
  allocator.empty_cache();
  const std::int64_t allocated_after = allocated_now(), reserved_after = reserved_now();

  // A cached block of the size first, then the two ways timed.
  { Tensor warm = empty({numel}); }
  const Cost cached = allocation_cost(numel, repeats, false);
  const Cost fresh = allocation_cost(numel, repeats, true);

  Report report("empty-cache", cli.get("model") + " after one training step at batch " +
                                   std::to_string(batch) + ", then a " + number_text(size_mib, 0) +
                                   " MiB tensor allocated and written");
  report.columns({"moment", "allocated", "reserved", "new segments", "allocate (median)",
                  "allocate + write (median)"});
  {
    JsonWriter j;
    j.field("moment", "before empty_cache");
    j.field("allocated_bytes", allocated_before);
    j.field("reserved_bytes", reserved_before);
    report.row({"after the step, before empty_cache()", bytes_text(allocated_before),
                bytes_text(reserved_before), "-", "-", "-"},
               j);
  }
  {
    JsonWriter j;
    j.field("moment", "after empty_cache");
    j.field("allocated_bytes", allocated_after);
    j.field("reserved_bytes", reserved_after);
    report.row({"after empty_cache()", bytes_text(allocated_after), bytes_text(reserved_after), "-",
                "-", "-"},
               j);
  }
  for (const auto& [name, c] : {std::pair<const char*, const Cost&>{"from the cache", cached},
                                {"right after empty_cache()", fresh}}) {
    JsonWriter j;
    j.field("moment", std::string("allocate ") + name);
    j.field("new_segments", c.new_segments);
    j.field("allocate_us", c.allocate_us);
    j.field("allocate_and_write_us", c.fill_us);
    report.row({std::string("allocate ") + number_text(size_mib, 0) + " MiB " + name, "-", "-",
                std::to_string(c.new_segments) + " of " + std::to_string(repeats),
                number_text(c.allocate_us, 1) + " us", number_text(c.fill_us, 1) + " us"},
               j);
  }
  report.note("empty_cache() returned " + bytes_text(reserved_before - reserved_after) +
              " to the system; allocated "
              "bytes are unchanged (" +
              (allocated_before == allocated_after ? "checked" : "CHANGED") + ")");
  report.note(
      "after empty_cache() every allocation needed a new segment (mmap) and its pages fault in on "
      "first write: " +
      number_text(fresh.fill_us / std::max(cached.fill_us, 1e-3), 1) +
      "x the cached allocate + write");
  report.note("times are wall clock on a shared machine: compare them within this run only");
  JsonWriter& f = report.figures();
  f.field("reserved_before_bytes", reserved_before);
  f.field("reserved_after_bytes", reserved_after);
  f.field("allocated_unchanged", allocated_before == allocated_after);
  f.field("cached_allocate_us", cached.allocate_us);
  f.field("cached_allocate_and_write_us", cached.fill_us);
  f.field("cached_new_segments", cached.new_segments);
  f.field("fresh_allocate_us", fresh.allocate_us);
  f.field("fresh_allocate_and_write_us", fresh.fill_us);
  f.field("fresh_new_segments", fresh.new_segments);
  report.print(cli.has("json"), seconds_now() - t0);
  return 0;
}

}  // namespace frugal::memlab
