// A strict JSON (RFC 8259) parser for tests that check generated JSON, e.g. Chrome traces.
//
//   absl::StatusOr<test::JsonValue> v = test::ParseJson(text);
//   ASSERT_TRUE(v.ok()) << v.status();          // says where the text stops being JSON
//   const test::JsonValue* events = v->Get("traceEvents");
//
// Strict: no trailing commas, no comments, no leading zeros, no raw control characters in
// strings, \u escapes (surrogate pairs included) decoded to UTF-8. Header-only; tests only.
#ifndef SHARDFLOW_TESTS_UTIL_MINI_JSON_H_
#define SHARDFLOW_TESTS_UTIL_MINI_JSON_H_

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shardflow {
namespace test {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string str;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in text order

  // The member `key` of an object, or null.
  const JsonValue* Get(absl::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  // Member `key` as a string / number, or "" / NaN-free 0 when absent or of another kind.
  std::string GetString(absl::string_view key) const {
    const JsonValue* v = Get(key);
    return v != nullptr && v->kind == kString ? v->str : "";
  }
  double GetNumber(absl::string_view key) const {
    const JsonValue* v = Get(key);
    return v != nullptr && v->kind == kNumber ? v->number : 0;
  }
};

class JsonParser {
 public:
  explicit JsonParser(absl::string_view text) : s_(text) {}

  absl::StatusOr<JsonValue> Parse() {
    JsonValue v;
    if (!Value(&v, 0)) return Error();
    SkipSpace();
    if (pos_ != s_.size()) {
      error_ = "trailing characters after the value";
      return Error();
    }
    return v;
  }

 private:
  absl::Status Error() const {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at offset ", pos_, ": ", error_,
                                                   " near '", s_.substr(pos_, 40), "'"));
  }
  bool Fail(const char* why) {
    error_ = why;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Consume(absl::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool Value(JsonValue* v, int depth) {
    if (depth > 200) return Fail("nesting too deep");
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end of text");
    char c = s_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->kind = JsonValue::kString;
      return String(&v->str);
    }
    if (Consume("true") || Consume("false")) {
      v->kind = JsonValue::kBool;
      v->boolean = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
      return true;
    }
    if (Consume("null")) return true;
    return Number(v);
  }
  bool Object(JsonValue* v, int depth) {
    v->kind = JsonValue::kObject;
    ++pos_;
    SkipSpace();
    if (Consume("}")) return true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a string key");
      if (!String(&key)) return false;
      SkipSpace();
      if (!Consume(":")) return Fail("expected ':'");
      JsonValue member;
      if (!Value(&member, depth + 1)) return false;
      v->object.emplace_back(std::move(key), std::move(member));
      SkipSpace();
      if (Consume("}")) return true;
      if (!Consume(",")) return Fail("expected ',' or '}'");
    }
  }
  bool Array(JsonValue* v, int depth) {
    v->kind = JsonValue::kArray;
    ++pos_;
    SkipSpace();
    if (Consume("]")) return true;
    while (true) {
      JsonValue element;
      if (!Value(&element, depth + 1)) return false;
      v->array.push_back(std::move(element));
      SkipSpace();
      if (Consume("]")) return true;
      if (!Consume(",")) return Fail("expected ',' or ']'");
    }
  }
  bool Hex4(unsigned* out) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    *out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return Fail("bad hex digit in \\u escape");
      *out = *out * 16 + d;
    }
    return true;
  }
  static void AppendUtf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool String(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return Fail("raw control character in string");
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) return Fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          unsigned cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {
            unsigned low;
            if (!Consume("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return Fail("unpaired high surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return Fail("unpaired low surrogate");
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Fail("unknown escape");
      }
    }
  }
  bool Digits() {
    size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool Number(JsonValue* v) {
    size_t start = pos_;
    Consume("-");
    if (Consume("0")) {
      if (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') return Fail("leading zero");
    } else if (!Digits()) {
      return Fail("expected a value");
    }
    if (Consume(".") && !Digits()) return Fail("expected digits after '.'");
    if (Consume("e") || Consume("E")) {
      if (!Consume("+")) Consume("-");
      if (!Digits()) return Fail("expected exponent digits");
    }
    v->kind = JsonValue::kNumber;
    v->number = std::strtod(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr);
    return true;
  }

  absl::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

inline absl::StatusOr<JsonValue> ParseJson(absl::string_view text) {
  return JsonParser(text).Parse();
}

}  // namespace test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_UTIL_MINI_JSON_H_
