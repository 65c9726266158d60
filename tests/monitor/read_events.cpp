// frugal-test-read-events: prints every scalar of TensorBoard event files as
// "step<TAB>tag<TAB>value" lines, through the tests' independent reader (every CRC
// checked); exits 1 naming the file and the record when one is damaged. For shell tests.
#include <cstdio>
#include <exception>

#include "event_reader.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: frugal-test-read-events EVENT_FILE...\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    try {
      const auto events = frugal::test::read_event_file(argv[i]);
      if (events.empty() || events[0].file_version != "brain.Event:2") {
        std::fprintf(stderr, "%s: the first event is not the file version brain.Event:2\n",
                     argv[i]);
        return 1;
      }
      for (const auto& e : events)
        for (const auto& v : e.values)
          std::printf("%lld\t%s\t%.9g\n", static_cast<long long>(e.step), v.tag.c_str(),
                      v.simple_value);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", argv[i], e.what());
      return 1;
    }
  }
  return 0;
}
