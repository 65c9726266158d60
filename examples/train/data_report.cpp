// frugal-train's report of its data, on stdout and in --metrics-json.
#include "examples/train/data_report.h"

#include <cstdio>

#include "common/json_writer.h"

namespace frugal::train {

std::string float_list(const std::vector<float>& values) {
  std::string s;
  for (float v : values) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
    if (!s.empty()) s += ',';
    s += buf;
  }
  return "[" + s + "]";
}

std::string split_json(const DataInfo& info, const DataSource& source) {
  JsonWriter j;
  j.field("kind", info.split);
  if (info.split == "held_out") j.field("val_fraction", info.val_fraction);
  j.field("train", source.train_size());
  j.field("eval", source.test_size());
  return j.str();
}

// What the data became: the split, the image geometry, the transforms and normalisation.
void print_data_info(const DataInfo& info, const DataSource& source, std::uint64_t seed) {
  const auto train = static_cast<long long>(source.train_size()),
             eval = static_cast<long long>(source.test_size());
  if (info.split == "held_out")
    std::printf(
        "split: %lld train / %lld held out for evaluation (%.3g of every class, stratified, "
        "seed %llu)\n",
        train, eval, info.val_fraction, static_cast<unsigned long long>(seed));
  else
    std::printf("split: %lld train / %lld test (%s)\n", train, eval,
                info.split == "folders" ? "train/ and test/ folders" : info.split.c_str());
  std::printf("images: %lld channel%s, %lldx%lld, %zu classes\n",
              static_cast<long long>(info.channels), info.channels == 1 ? "" : "s",
              static_cast<long long>(info.height), static_cast<long long>(info.width),
              info.classes.size());
  std::printf("transforms: train %s\n            eval  %s\n", info.train_transform.c_str(),
              info.eval_transform.c_str());
  if (info.mean.empty()) {
    std::printf("normalize: none (%s)\n", info.normalize_from.c_str());
  } else {
    std::string mean, std;
    for (std::size_t i = 0; i < info.mean.size(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", static_cast<double>(info.mean[i]));
      mean += buf;
      std::snprintf(buf, sizeof buf, "%s%.4f", i ? ", " : "", static_cast<double>(info.std[i]));
      std += buf;
    }
    std::printf("normalize: mean [%s] std [%s] (%s)\n", mean.c_str(), std.c_str(),
                info.normalize_from.c_str());
  }
}

}  // namespace frugal::train
