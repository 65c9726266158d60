// JSON text for frugal's machine-readable outputs.
#include "common/json_writer.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "common/error.h"
#include "common/format.h"

namespace frugal {

std::string JsonWriter::quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonWriter::field(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, quote(value));
}

void JsonWriter::field(const std::string& key, std::int64_t value) {
  fields_.emplace_back(key, std::to_string(value));
}

std::string JsonWriter::number(double value) {
  return std::isfinite(value) ? format_double_exact(value) : "null";
}

std::string JsonWriter::array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]";
}

void JsonWriter::field(const std::string& key, double value) {
  fields_.emplace_back(key, number(value));
}

void JsonWriter::field(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
}

void JsonWriter::raw(const std::string& key, const std::string& json) {
  fields_.emplace_back(key, json);
}

std::string JsonWriter::str() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    out += (i ? ", " : "") + quote(fields_[i].first) + ": " + fields_[i].second;
  }
  return out + "}";
}

void JsonWriter::write_file(const std::string& path) const {
  std::ofstream out(path);
  out << str() << "\n";
  if (!out) throw Error("cannot write JSON to '" + path + "'");
}

}  // namespace frugal
