// Checkpoint layout and its round trip through data/safetensors.
#include "examples/train/checkpoint.h"

#include <cstdlib>
#include <map>

#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "data/file_io.h"
#include "data/safetensors.h"

namespace frugal::train {

namespace {

constexpr const char* kFormat = "frugal-train checkpoint v1";

// A metadata entry; its absence is a frugal::Error naming the file.
const std::string& meta_value(const std::map<std::string, std::string>& meta,
                              const std::string& key, const std::string& path) {
  auto it = meta.find(key);
  FRUGAL_CHECK(it != meta.end(), path + ": checkpoint metadata lacks '" + key + "'");
  return it->second;
}

std::int64_t parse_int(const std::map<std::string, std::string>& meta, const std::string& key,
                       const std::string& path) {
  const std::string& text = meta_value(meta, key, path);
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    throw Error(path + ": checkpoint metadata '" + key + "' is not an integer: '" + text + "'");
  }
}

void write_digest(const std::string& path, const nn::NamedTensors& tensors) {
  std::string entries;
  for (const auto& [name, t] : tensors) {
    JsonWriter e;
    e.field("dtype", dtype_name(t.dtype()));
    std::string shape = "[";
    for (std::int64_t d = 0; d < t.dim(); ++d) {
      if (d) shape += ',';
      shape += std::to_string(t.size(d));
    }
    e.raw("shape", shape + "]");
    e.field("crc32", static_cast<std::int64_t>(data::tensor_crc32(t)));
    if (!entries.empty()) entries += ",\n  ";
    entries += JsonWriter::quote(name) + ": " + e.str();
  }
  const std::string text = "{\n  " + entries + "\n}\n";
  data::AtomicFile out(path, "checkpoint digest");
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const amp::GradScaler& scaler,
                     const TrainState& s) {
  nn::NamedTensors tensors;
  for (const auto& [name, t] : model.state_dict()) tensors.emplace_back("model." + name, t);
  for (const auto& [name, t] : optimizer.state_dict()) tensors.emplace_back("optimizer." + name, t);
  for (const auto& [name, t] : scaler.state_dict()) tensors.emplace_back("scaler." + name, t);
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"model", s.model},
      {"optimizer", s.optimizer},
      {"lr_schedule", s.lr_schedule},
      {"amp", s.amp},
      {"epoch", std::to_string(s.epoch)},
      {"step_in_epoch", std::to_string(s.step_in_epoch)},
      {"global_step", std::to_string(s.global_step)},
      {"seed", std::to_string(s.seed)},
      {"rng_seed", std::to_string(s.rng_seed)},
      {"rng_offset", std::to_string(s.rng_offset)},
      {"lr", std::to_string(optimizer.lr())},
      {"epoch_loss_sum", format_double_exact(s.epoch_loss_sum)},
      {"epoch_seen", std::to_string(s.epoch_seen)},
      {"epoch_correct", std::to_string(s.epoch_correct)},
  };
  // Every tensor's crc32, so that a file damaged after it was written (a bad disk, a copy
  // cut short) is refused by name instead of resuming from wrong weights.
  for (const auto& [name, t] : tensors)
    meta["crc32." + name] = std::to_string(data::tensor_crc32(t));
  data::save_safetensors(path, tensors, meta);
  write_digest(path + ".digest.json", tensors);
}

TrainState load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& optimizer,
                           amp::GradScaler& scaler, const TrainState& expect) {
  const data::SafetensorsFile file = data::load_safetensors(path);
  const auto& meta = file.metadata;
  auto get = [&](const std::string& key) { return meta_value(meta, key, path); };
  FRUGAL_CHECK(get("format") == kFormat,
               path + ": not a frugal-train checkpoint (format '" + get("format") + "')");
  TrainState s;
  s.model = get("model");
  s.optimizer = get("optimizer");
  s.lr_schedule = get("lr_schedule");
  FRUGAL_CHECK(s.model == expect.model, path + ": the checkpoint holds a '" + s.model +
                                            "' model but --model is '" + expect.model + "'");
  FRUGAL_CHECK(s.optimizer == expect.optimizer,
               path + ": the checkpoint was made with --optimizer " + s.optimizer +
                   " but this run uses " + expect.optimizer);
  // Checkpoints from before mixed precision have no "amp": they were float32 runs.
  s.amp = meta.count("amp") ? get("amp") : "off";
  FRUGAL_CHECK(s.amp == expect.amp, path + ": the checkpoint was made with --amp " + s.amp +
                                        " but this run uses --amp " + expect.amp);
  FRUGAL_CHECK(s.lr_schedule == expect.lr_schedule,
               path + ": the checkpoint was made with --lr-schedule " + s.lr_schedule +
                   " but this run uses " + expect.lr_schedule);
  s.epoch = parse_int(meta, "epoch", path);
  s.step_in_epoch = parse_int(meta, "step_in_epoch", path);
  s.global_step = parse_int(meta, "global_step", path);
  s.seed = static_cast<std::uint64_t>(parse_int(meta, "seed", path));
  s.rng_seed = static_cast<std::uint64_t>(parse_int(meta, "rng_seed", path));
  s.rng_offset = static_cast<std::uint64_t>(parse_int(meta, "rng_offset", path));
  // Checkpoints from before --save-every have none of these: they were saved at epoch ends.
  if (meta.count("epoch_seen")) {
    s.epoch_seen = parse_int(meta, "epoch_seen", path);
    s.epoch_correct = parse_int(meta, "epoch_correct", path);
    const std::string& sum = get("epoch_loss_sum");
    char* end = nullptr;
    s.epoch_loss_sum = std::strtod(sum.c_str(), &end);
    FRUGAL_CHECK(end != sum.c_str() && *end == '\0',
                 path + ": checkpoint metadata 'epoch_loss_sum' is not a number: '" + sum + "'");
  }
  nn::NamedTensors model_state, optimizer_state, scaler_state;
  for (std::size_t i = 0; i < file.tensors.size(); ++i) {
    const auto& [name, t] = file.tensors[i];
    if (auto crc = meta.find("crc32." + name); crc != meta.end()) {
      const std::string actual = std::to_string(data::tensor_crc32(t));
      FRUGAL_CHECK(actual == crc->second, path + ": tensor '" + name + "' (bytes from offset " +
                                              std::to_string(file.file_offsets[i]) +
                                              ") has crc32 " + actual + " but was saved with " +
                                              crc->second +
                                              ": the file was damaged after it was written");
    }
    if (name.rfind("model.", 0) == 0)
      model_state.emplace_back(name.substr(6), t);
    else if (name.rfind("optimizer.", 0) == 0)
      optimizer_state.emplace_back(name.substr(10), t);
    else if (name.rfind("scaler.", 0) == 0)
      scaler_state.emplace_back(name.substr(7), t);
    else
      throw Error(path + ": unexpected tensor '" + name + "' in a frugal-train checkpoint");
  }
  model.load_state_dict(model_state);
  optimizer.load_state_dict(optimizer_state);
  scaler.load_state_dict(scaler_state);
  default_generator().set_state(s.rng_seed, s.rng_offset);
  return s;
}

}  // namespace frugal::train
