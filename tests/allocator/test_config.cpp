// FRUGAL_ALLOC_CONF parsing: PyTorch's keys and syntax, and clear errors for bad input.
#include <catch2/catch.hpp>

#include "allocator/config.h"
#include "common/error.h"

using frugal::ConfigError;
using frugal::alloc::AllocatorConfig;

TEST_CASE("defaults: expandable segments on, no split limit, no rounding, no GC") {
  const AllocatorConfig c = AllocatorConfig::parse("");
  CHECK(c.expandable_segments);
  CHECK(c.max_split_size == std::numeric_limits<std::size_t>::max());
  CHECK(c.garbage_collection_threshold == 0.0);
  CHECK(c.roundup_divisions_for(std::size_t{100} << 20) == 0);
}

TEST_CASE("PyTorch's keys are accepted") {
  const AllocatorConfig c = AllocatorConfig::parse(
      "max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:False,"
      "roundup_power2_divisions:4,max_non_split_rounding_mb:8");
  CHECK(c.max_split_size == std::size_t{128} << 20);
  CHECK(c.garbage_collection_threshold == Approx(0.6));
  CHECK_FALSE(c.expandable_segments);
  CHECK(c.roundup_divisions_for(std::size_t{3} << 20) == 4);
  CHECK(c.max_non_split_rounding == std::size_t{8} << 20);
  CHECK(AllocatorConfig::parse("expandable_segments:True").expandable_segments);
}

TEST_CASE("roundup_power2_divisions accepts the per-size list form") {
  const AllocatorConfig c = AllocatorConfig::parse("roundup_power2_divisions:[256:1,512:2,>:8]");
  CHECK(c.roundup_divisions_for(std::size_t{1} << 20) == 1);
  CHECK(c.roundup_divisions_for(std::size_t{255} << 20) == 1);
  CHECK(c.roundup_divisions_for(std::size_t{300} << 20) == 2);
  CHECK(c.roundup_divisions_for(std::size_t{600} << 20) == 8);
  CHECK(c.roundup_divisions_for(std::size_t{40} << 30) == 8);
}

TEST_CASE("malformed values and unknown keys are errors that name them") {
  auto message = [](const char* text) {
    try {
      AllocatorConfig::parse(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("max_split_size_mb:abc"),
             Catch::Contains("max_split_size_mb") && Catch::Contains("'abc'"));
  CHECK_THAT(message("max_split_size_mb:10"), Catch::Contains("greater than 20"));
  CHECK_THAT(message("garbage_collection_threshold:1.5"),
             Catch::Contains("garbage_collection_threshold"));
  CHECK_THAT(message("garbage_collection_threshold:"), Catch::Contains("between 0 and 1"));
  CHECK_THAT(message("expandable_segments:yes"), Catch::Contains("True or False"));
  CHECK_THAT(message("roundup_power2_divisions:3"), Catch::Contains("power of two"));
  CHECK_THAT(message("roundup_power2_divisions:[512:2,256:1]"), Catch::Contains("increasing"));
  CHECK_THAT(message("roundup_power2_divisions:[256:1"), Catch::Contains("bracket"));
  CHECK_THAT(message("cuda_malloc_async:True"), Catch::Contains("unknown key 'cuda_malloc_async'"));
  CHECK_THAT(message("expandable_segments"), Catch::Contains("key:value"));
  CHECK_THAT(message("max_split_size_mb:abc"), Catch::StartsWith("FRUGAL_ALLOC_CONF: "));
}

TEST_CASE("the environment variable is read, and bad text there is an error too") {
  setenv("FRUGAL_ALLOC_CONF", "max_split_size_mb:64", 1);
  CHECK(AllocatorConfig::from_environment().max_split_size == std::size_t{64} << 20);
  setenv("FRUGAL_ALLOC_CONF", "nonsense:1", 1);
  CHECK_THROWS_AS(AllocatorConfig::from_environment(), ConfigError);
  unsetenv("FRUGAL_ALLOC_CONF");
  CHECK(AllocatorConfig::from_environment().expandable_segments);
}

TEST_CASE("to_string round-trips through parse") {
  const AllocatorConfig c = AllocatorConfig::parse(
      "max_split_size_mb:128,garbage_collection_threshold:0.5,expandable_segments:False,"
      "roundup_power2_divisions:[64:2,>:4]");
  const AllocatorConfig again = AllocatorConfig::parse(c.to_string());
  CHECK(again.max_split_size == c.max_split_size);
  CHECK(again.garbage_collection_threshold == c.garbage_collection_threshold);
  CHECK(again.expandable_segments == c.expandable_segments);
  CHECK(again.roundup_power2_divisions == c.roundup_power2_divisions);
}
