// Writes the seed corpora of the file-format fuzzers: valid safetensors files, idx files,
// allocation traces, FRUGAL_ALLOC_CONF strings, frugal-train argument lists and checkpoints of
// tests/fuzz/fuzz_model.h, each a few hundred bytes to a few KiB, so that libFuzzer starts from
// inputs that pass every check and mutates from there.
//   make_file_seeds DIR    (writes DIR/<target>/seed-*)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/safetensors.h"
#include "engine/frugal.h"
#include "examples/train/checkpoint.h"
#include "tests/fuzz/fuzz_model.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An idx file: magic 0 0 TYPE DIMS, big-endian dims, then `payload`.
std::string idx(unsigned char type, const std::vector<std::uint32_t>& dims,
                const std::string& payload) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>(d >> shift);
  return s + payload;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_file_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* d : {"safetensors", "idx", "trace", "alloc_conf", "train_options", "checkpoint"})
    fs::create_directories(root / d);

  // safetensors: each dtype, a scalar, an empty tensor, metadata.
  const fs::path st = root / "safetensors";
  data::save_safetensors((st / "seed-f32").string(), {{"w", randn({2, 3})}, {"b", zeros({3})}},
                         {{"format", "pt"}});
  data::save_safetensors((st / "seed-mixed").string(), {{"i", arange(4)},
                                                        {"h", randn({2, 2}).to(kFloat16)},
                                                        {"bf", randn({3}).to(kBFloat16)},
                                                        {"u8", arange(6).to(kUInt8)},
                                                        {"mask", gt(randn({5}), 0.0)},
                                                        {"s", full({}, 2.5)},
                                                        {"e", empty({0, 4})}});

  // idx: the fuzz_idx target's first byte is 0 (as is) or 1 (gzip the rest first).
  const std::string images = idx(0x08, {2, 3, 3}, std::string(18, '\x7f'));
  const std::string labels = idx(0x08, {2}, "\x01\x09");
  const std::string floats = idx(0x0D, {2}, std::string("\x3f\x80\x00\x00\x40\x00\x00\x00", 8));
  for (const auto& [name, bytes] :
       {std::pair{"images", images}, std::pair{"labels", labels}, std::pair{"floats", floats}}) {
    write(root / "idx" / (std::string("seed-") + name), std::string(1, '\0') + bytes);
    write(root / "idx" / (std::string("seed-gz-") + name), std::string(1, '\1') + bytes);
  }

  write(root / "trace" / "seed-small",
        "# frugal-alloc-trace v1\n# a comment\na 0 4096\na 1 1048576 7\nf 0\na 2 512\nf 1\nf 2\n");
  write(root / "trace" / "seed-large",
        "# frugal-alloc-trace v1\na 10 33554432\na 11 2097152\nf 10\na 12 25165824\nf 12\nf 11\n");

  const char* confs[] = {"expandable_segments:False",
                         "max_split_size_mb:64,garbage_collection_threshold:0.6",
                         "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
                         "roundup_power2_divisions:4,max_non_split_rounding_mb:32"};
  int n = 0;
  for (const char* c : confs) write(root / "alloc_conf" / ("seed-" + std::to_string(n++)), c);

  // Argument lists, NUL-separated as fuzz_train_options splits them.
  const std::vector<std::vector<std::string>> arglists = {
      {"--model", "mobilenet", "--epochs", "2", "--batch-size", "64", "--accum", "4"},
      {"--amp", "bf16", "--save", "ck.safetensors", "--save-every", "100", "--resume",
       "ck.safetensors"},
      {"--memory-limit", "96M", "--oom-recovery", "--threads=2", "--workers", "3", "--prefetch",
       "4"},
      {"--auto-batch-size", "--memory-budget", "1.5GiB", "--lr", "0.1", "--lr-schedule", "cosine"},
      {"--data", "photos", "--image-size", "64", "--channels", "3", "--val-fraction", "0.2",
       "--augment", "resized-crop", "--normalize", "0.5,0.5", "--skip-bad"},
      {"--help"}};
  n = 0;
  for (const auto& args : arglists) {
    std::string joined;
    for (const auto& a : args) joined += a + '\0';
    write(root / "train_options" / ("seed-" + std::to_string(n++)), joined);
  }

  // Checkpoints after 0 and 2 steps (the second with momentum buffers and a grown scale).
  fuzz::CheckpointSubject subject;
  for (int steps : {0, 2}) {
    subject.reset();
    for (int i = 0; i < steps; ++i) subject.step();
    train::TrainState state = subject.expect;
    state.global_step = state.step_in_epoch = steps;
    const fs::path path = root / "checkpoint" / ("seed-" + std::to_string(steps));
    train::save_checkpoint(path.string(), *subject.model, *subject.optimizer, *subject.scaler,
                           state);
    fs::remove(path.string() + ".digest.json");
  }
  std::printf("seeds written to %s\n", root.c_str());
  return 0;
}
