// safetensors writer and reader. The reader trusts nothing: the header is parsed with the
// strict reader of data/json.h and every byte range is checked against the shapes and the
// file before any tensor is allocated.
#include "data/safetensors.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "common/error.h"
#include "data/file_io.h"
#include "data/json.h"
#include "engine/ops/factory.h"

namespace frugal::data {

static_assert(
    std::endian::native == std::endian::little,
    "safetensors stores little-endian bytes; this reader and writer copy them as they are");

namespace {

// Like the reference implementation: a larger header is a damaged or hostile file.
constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;

struct DtypeCode {
  const char* code;
  ScalarType dtype;
};
constexpr DtypeCode kCodes[] = {
    {"F32", kFloat32}, {"F64", kFloat64}, {"F16", kFloat16}, {"BF16", kBFloat16},
    {"I32", kInt32},   {"I64", kInt64},   {"U8", kUInt8},    {"BOOL", kBool},
};
// Codes of the format that frugal has no dtype for, refused as unsupported, not unknown.
constexpr const char* kUnsupportedCodes[] = {"I8",      "I16",     "U16",     "U32",
                                             "U64",     "F8_E4M3", "F8_E5M2", "F8_E8M0",
                                             "F6_E2M3", "F6_E3M2", "F4",      "C64"};

// The CPU, contiguous, history-free version of t: the bytes the file holds.
Tensor file_bytes(const Tensor& t) {
  Tensor c = t.detach();
  if (!c.is_cpu()) c = c.cpu();
  return c.contiguous();
}

struct Entry {
  std::string name;
  ScalarType dtype;
  DimVector shape;
  std::uint64_t begin, end;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw Error("load_safetensors: " + path_ + ": " + message);
  }
  [[noreturn]] void fail_tensor(const std::string& name, const std::string& message) const {
    fail("tensor " + json::quote(name) + ": " + message);
  }

  Entry entry(const std::string& name, const json::Value& v) const {
    if (!v.is_object())
      fail_tensor(name, std::string("expected an object, found ") + json::kind_name(v.kind));
    for (const auto& [key, _] : v.object)
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail_tensor(
            name, "unexpected key " + json::quote(key) + " (expected dtype, shape, data_offsets)");
    Entry e{name, kFloat32, {}, 0, 0};
    e.dtype = dtype(name, member(name, v, "dtype", json::Value::Kind::String).string);

    const json::Value& shape = member(name, v, "shape", json::Value::Kind::Array);
    if (shape.array.size() > static_cast<std::size_t>(kMaxDims))
      fail_tensor(name, "shape has " + std::to_string(shape.array.size()) +
                            " dims; frugal tensors have at most " + std::to_string(kMaxDims));
    std::uint64_t bytes = element_size(e.dtype);
    bool overflow = false;
    for (const json::Value& d : shape.array) {
      if (!d.is_integer() || d.integer < 0)
        fail_tensor(name, "shape must hold non-negative integers");
      e.shape.push_back(d.integer);
      overflow |= __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d.integer), &bytes);
    }

    const json::Value& offsets = member(name, v, "data_offsets", json::Value::Kind::Array);
    if (offsets.array.size() != 2 || !offsets.array[0].is_integer() ||
        !offsets.array[1].is_integer() || offsets.array[0].integer < 0 ||
        offsets.array[1].integer < offsets.array[0].integer)
      fail_tensor(name, "data_offsets must be [begin, end] with 0 <= begin <= end");
    e.begin = static_cast<std::uint64_t>(offsets.array[0].integer);
    e.end = static_cast<std::uint64_t>(offsets.array[1].integer);
    if (overflow || bytes != e.end - e.begin)
      fail_tensor(name, "shape " + shape_string(e.shape) + " of " + safetensors_dtype(e.dtype) +
                            " needs " +
                            (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
                            " bytes but data_offsets [" + std::to_string(e.begin) + ", " +
                            std::to_string(e.end) + "] span " + std::to_string(e.end - e.begin));
    return e;
  }

 private:
  const json::Value& member(const std::string& name, const json::Value& v, const char* key,
                            json::Value::Kind kind) const {
    const json::Value* m = v.find(key);
    if (!m) fail_tensor(name, std::string("missing \"") + key + "\"");
    if (m->kind != kind)
      fail_tensor(name, std::string("\"") + key + "\" must be " + json::kind_name(kind) +
                            ", found " + json::kind_name(m->kind));
    return *m;
  }

  ScalarType dtype(const std::string& name, const std::string& code) const {
    for (const DtypeCode& c : kCodes)
      if (code == c.code) return c.dtype;
    for (const char* u : kUnsupportedCodes)
      if (code == u) fail_tensor(name, "dtype " + code + " is not supported by frugal");
    fail_tensor(name, "unknown dtype " + json::quote(code) +
                          " (expected F32, F64, F16, BF16, I32, I64, U8 or BOOL)");
  }

  std::string path_;
};

}  // namespace

const char* safetensors_dtype(ScalarType dtype) {
  for (const DtypeCode& c : kCodes)
    if (c.dtype == dtype) return c.code;
  throw Error(std::string("safetensors: no code for dtype ") + dtype_name(dtype));
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string what = "save_safetensors: " + path + ": ";
  std::set<std::string> names;
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += json::quote(k);
      header += ':';
      header += json::quote(v);
      first = false;
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    FRUGAL_CHECK(!name.empty(), what + "a tensor has an empty name");
    FRUGAL_CHECK(name != "__metadata__",
                 what + "\"__metadata__\" is reserved and cannot name a tensor");
    FRUGAL_CHECK(names.insert(name).second, what + "duplicate tensor name " + json::quote(name));
    FRUGAL_CHECK(t.defined(), what + "tensor " + json::quote(name) + " is undefined");
    std::string shape;
    for (std::int64_t d : t.sizes()) {
      if (!shape.empty()) shape += ',';
      shape += std::to_string(d);
    }
    const std::uint64_t end = offset + t.nbytes();
    if (header.size() > 1) header += ',';
    header += json::quote(name) + ":{\"dtype\":\"" + safetensors_dtype(t.dtype()) +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  // Spaces (which JSON ignores) pad the header so that the data starts 8-byte aligned and
  // a reader that maps the file can view every tensor in place.
  header.append((8 - header.size() % 8) % 8, ' ');

  AtomicFile out(path, "save_safetensors");
  unsigned char length[8];
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(length, 8);
  out.write(header.data(), header.size());
  for (const auto& [name, t] : tensors) {
    const Tensor bytes = file_bytes(t);
    if (bytes.nbytes() > 0) out.write(bytes.data_ptr(), bytes.nbytes());
  }
  out.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  Reader r(path);
  InputFile file(path, "load_safetensors");
  if (file.size() < 8)
    r.fail("file of " + std::to_string(file.size()) +
           " bytes is too short for the 8-byte header length");
  unsigned char length[8];
  file.read_exact(length, 8, "header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length[i];
  if (n > file.size() - 8)
    r.fail("header length " + std::to_string(n) + " goes beyond the file of " +
           std::to_string(file.size()) + " bytes (not a safetensors file, or truncated)");
  if (n > kMaxHeaderBytes)
    r.fail("header length " + std::to_string(n) + " is over the 100 MiB limit");
  std::string header(n, '\0');
  file.read_exact(header.data(), n, "header");

  json::Value root;
  try {
    root = json::parse(header);
  } catch (const Error& e) {
    r.fail(std::string("invalid JSON header: ") + e.what());
  }
  if (!root.is_object())
    r.fail(std::string("the header must be a JSON object, found ") + json::kind_name(root.kind));

  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.object) {
    if (key == "__metadata__") {
      if (!value.is_object()) r.fail("\"__metadata__\" must be an object of strings");
      for (const auto& [k, v] : value.object) {
        if (!v.is_string())
          r.fail("\"__metadata__\" value of " + json::quote(k) + " must be a string, found " +
                 json::kind_name(v.kind));
        result.metadata[k] = v.string;
      }
      continue;
    }
    entries.push_back(r.entry(key, value));
  }

  // The tensors must tile the data buffer exactly: sorted by offset, each begins where the
  // previous ended, and the last ends at the end of the file.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const std::uint64_t buffer = file.size() - 8 - n;
  std::uint64_t cursor = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    std::string range = "[";
    range += std::to_string(e.begin);
    range += ", ";
    range += std::to_string(e.end);
    range += ']';
    if (e.begin < cursor)
      r.fail_tensor(e.name, "data_offsets " + range + " overlap tensor " +
                                json::quote(previous->name) + " which ends at " +
                                std::to_string(cursor));
    if (e.begin > cursor)
      r.fail_tensor(e.name, "data_offsets " + range + " leave a gap of " +
                                std::to_string(e.begin - cursor) + " bytes after " +
                                (previous ? "tensor " + json::quote(previous->name)
                                          : std::string("the header")));
    if (e.end > buffer)
      r.fail_tensor(e.name, "data_offsets " + range +
                                " reach past the end of the data: the file holds " +
                                std::to_string(buffer) +
                                " bytes after the header (truncated, or offsets out of range)");
    cursor = e.end;
    previous = &e;
  }
  if (cursor < buffer)
    r.fail(std::to_string(buffer - cursor) +
           " trailing bytes after the last tensor's data (which ends at " + std::to_string(cursor) +
           ")");

  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    file.read_exact(t.data_ptr(), t.nbytes(), "data of tensor " + json::quote(e.name));
    if (e.dtype == kBool) {
      const auto* b = static_cast<const unsigned char*>(t.data_ptr());
      for (std::int64_t i = 0; i < t.numel(); ++i)
        if (b[i] > 1)
          r.fail_tensor(e.name, "BOOL element " + std::to_string(i) + " holds byte " +
                                    std::to_string(b[i]) + " (must be 0 or 1)");
    }
    result.tensors.emplace_back(e.name, std::move(t));
    result.file_offsets.push_back(8 + n + e.begin);
  }
  return result;
}

const Tensor& SafetensorsFile::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw Error("safetensors: no tensor named " + json::quote(name) + " (the file has " +
              std::to_string(tensors.size()) + " tensors)");
}

std::uint32_t tensor_crc32(const Tensor& t) {
  FRUGAL_CHECK(t.defined(), "tensor_crc32: undefined tensor");
  const Tensor bytes = file_bytes(t);
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(bytes.data_ptr());
  std::size_t left = bytes.nbytes();
  while (left > 0) {  // crc32 takes a 32-bit length
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    left -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

}  // namespace frugal::data
