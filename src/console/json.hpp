// A small JSON writer and reader for the console's snapshot protocol (docs/console.md): the
// core needs only libc and pthreads, so no JSON library. The writer emits one line (no
// whitespace); the reader parses one line into a tree. Not a general-purpose JSON library:
// numbers are integers or doubles, strings are UTF-8 passed through (only the escapes JSON
// requires are written; \uXXXX is read as UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spool::console {

// Appends JSON to a string. Keys and values alternate inside objects; the writer inserts
// the commas and colons.
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The key of the next member of the current object.
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(std::uint32_t n) { return value(std::uint64_t{n}); }
  JsonWriter& value(int n) { return value(std::int64_t{n}); }
  // Written with 4 significant decimals (shares and ratios); non-finite numbers as null.
  JsonWriter& value(double d);
  // key(k) then value(v).
  template <class T>
  JsonWriter& member(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& text() const noexcept { return out_; }
  std::string take() && noexcept { return std::move(out_); }

 private:
  // Before a value or a key: the comma that separates it from the previous one.
  void separate();
  std::string out_;
  bool need_comma_ = false;  // a value was written in the current container
  bool after_key_ = false;   // the next value is a member's: no comma
};

struct JsonMember;

// A parsed JSON value.
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::int64_t integer = 0;  // the number, when it is an integer (exact up to 2^63)
  bool is_integer = false;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<JsonMember> object;  // in the text's order

  // The member called `k` of an object, or null when absent (or this is not an object).
  const JsonValue* find(std::string_view k) const noexcept;
  bool is_null() const noexcept { return kind == Kind::kNull; }
};

// One member of an object (a struct of its own: a std::pair of an incomplete type is not
// allowed, so JsonValue could not hold those).
struct JsonMember {
  std::string name;
  JsonValue value;
};

// The deepest nesting parse_json takes (objects and arrays): a hostile line cannot make the
// parser recurse without bound.
inline constexpr int kMaxJsonDepth = 64;

// Parses one JSON text (surrounding whitespace allowed); throws std::invalid_argument that
// says what and where (the byte offset) on malformed input. Nesting deeper than 64 is refused
// (a hostile peer cannot overflow the stack).
JsonValue parse_json(std::string_view text);

}  // namespace spool::console
