// A flat JSON object writer for --json and --metrics-json output: fields in insertion
// order, strings escaped, numbers written exactly (integers) or with full precision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal {

class JsonWriter {
 public:
  void field(const std::string& key, const std::string& value);
  void field(const std::string& key, const char* value) { field(key, std::string(value)); }
  void field(const std::string& key, std::int64_t value);
  void field(const std::string& key, double value);
  void field(const std::string& key, bool value);
  // A value that is already JSON (a nested object or array from another writer).
  void raw(const std::string& key, const std::string& json);

  std::string str() const;
  // Throws frugal::Error naming the file when it cannot be written.
  void write_file(const std::string& path) const;

  static std::string quote(const std::string& text);
  // A number as field() writes it: full precision, null when not finite (for raw arrays).
  static std::string number(double value);
  // A JSON array of values that are JSON already (quote()d strings, number()s, str()s).
  static std::string array(const std::vector<std::string>& items);

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace frugal
