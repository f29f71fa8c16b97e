#include "server/pick_body.h"

#include <array>
#include <cstddef>
#include <cstring>
#include <string>

#include "routing/prefix_hash.h"

namespace eoc::server {
namespace {

constexpr std::string_view kUnexpectedEnd = "unexpected end";

// The fields the body may carry, in the order of kFieldNames.
enum class Field : std::uint8_t {
  kPool,
  kModel,
  kSessionId,
  kPromptTokens,
  kExpectedTokens,
  kPrefixHashes,
  kPrompt,
  kWaitMs,
  kUnknown,
};
constexpr std::array<std::string_view, 8> kFieldNames = {
    "pool",          "model",  "session_id", "prompt_tokens", "expected_tokens",
    "prefix_hashes", "prompt", "wait_ms"};

Field FieldOf(std::string_view key) {
  for (std::size_t i = 0; i < kFieldNames.size(); ++i) {
    if (key == kFieldNames[i]) return static_cast<Field>(i);
  }
  return Field::kUnknown;
}

std::string_view NameOf(Field field) { return kFieldNames[static_cast<std::size_t>(field)]; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Sixteen bytes as one vector (GCC's and Clang's vector extension: SSE2 on x86-64, NEON on
// arm64, plain code elsewhere).
using Lane16 = unsigned char __attribute__((vector_size(16)));

// Whether one of the 64 bytes at `p` is '"', '\\' or a control character.
bool AnySpecialIn64(const char* p) {
  const Lane16 quote = Lane16{} + static_cast<unsigned char>('"');
  const Lane16 backslash = Lane16{} + static_cast<unsigned char>('\\');
  const Lane16 space = Lane16{} + static_cast<unsigned char>(0x20);
  Lane16 any{};
  for (std::size_t i = 0; i < 4; ++i) {
    Lane16 v;
    std::memcpy(&v, p + (16 * i), sizeof v);
    // Each comparison is all ones in the lanes where it holds.
    any |= reinterpret_cast<Lane16>((v == quote) | (v == backslash) | (v < space));
  }
  std::uint64_t halves[2];
  std::memcpy(halves, &any, sizeof halves);
  return (halves[0] | halves[1]) != 0;
}

// The first byte at or after `pos` that ends a run of plain string bytes: '"', '\\' or a control
// character (RFC 8259 section 7); `size` when there is none. 64 bytes at a time, then eight: a long
// prompt without escapes costs one pass (scanned 8 bytes at a time, it took 29% of a 220 KB
// pick's CPU under perf: bench/results/pick.md).
std::size_t FindStringSpecial(const char* data, std::size_t pos, std::size_t size) {
  while (size - pos >= 64 && !AnySpecialIn64(data + pos)) pos += 64;
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  constexpr std::uint64_t kQuotes = kOnes * static_cast<unsigned char>('"');
  constexpr std::uint64_t kBackslashes = kOnes * static_cast<unsigned char>('\\');
  constexpr std::uint64_t kSpaces = kOnes * 0x20U;
  while (size - pos >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, data + pos, sizeof word);
    const std::uint64_t quotes = word ^ kQuotes;            // a zero byte where a '"' is
    const std::uint64_t backslashes = word ^ kBackslashes;  // a zero byte where a '\\' is
    // Each term has a byte's high bit set for some byte that is zero (or, for the last, below
    // 0x20), and only when there is such a byte: exact for "is there one", which is all we ask.
    const std::uint64_t found = ((quotes - kOnes) & ~quotes) |
                                ((backslashes - kOnes) & ~backslashes) | ((word - kSpaces) & ~word);
    if ((found & kHighs) != 0) break;
    pos += 8;
  }
  for (; pos < size; ++pos) {
    const auto c = static_cast<unsigned char>(data[pos]);
    if (c == '"' || c == '\\' || c < 0x20) return pos;
  }
  return size;
}

void AppendUtf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// A scalar value as read, or a container skipped.
struct Value {
  enum class Kind : std::uint8_t { kString, kNumber, kTrue, kFalse, kNull, kContainer };
  Kind kind = Kind::kNull;
  // A string's text (decoded when a buffer was given, else as in the body), a number's token.
  std::string_view text;
  bool whole = false;  // a number with no sign, fraction or exponent
};

// The number in a whole-number token, if it is at most `max`.
std::optional<std::int64_t> WholeNumber(const Value& value, std::int64_t max) {
  if (value.kind != Value::Kind::kNumber || !value.whole) return std::nullopt;
  // No leading zeros, so 19 digits or more is at least 10^18, past every bound here; 18 digits
  // fit an int64.
  if (value.text.size() > 18) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : value.text) n = n * 10 + (c - '0');
  if (n > max) return std::nullopt;
  return n;
}

class Parser {
 public:
  Parser(std::string_view body, PickBody& out, PickBodyScratch& scratch)
      : body_(body), data_(body.data()), size_(body.size()), out_(out), scratch_(scratch) {}

  std::string Run();

 private:
  // Syntax: each returns false once syntax_error_ says why, and parsing stops there.
  bool Fail(std::size_t at, std::string_view what);
  bool FailDepth(std::size_t at);
  void SkipWhitespace();
  bool At(char c) const { return pos_ < size_ && data_[pos_] == c; }
  bool Expect(char c, std::string_view what);
  // At the opening '"'. Decodes into `decoded` when the string has escapes and a buffer is given.
  bool ReadString(std::string* decoded, std::string_view& text);
  bool ReadEscape(std::string* decoded);
  bool ReadHex4(std::size_t at, std::uint32_t& unit);
  bool ReadNumber(Value& value);
  bool ReadLiteral(std::string_view word);
  bool ReadScalar(std::string* decoded, Value& value);
  // A value whose container, if it is one, would open nesting level `depth`: scalars are read,
  // containers checked and skipped.
  bool ReadValue(int depth, std::string* decoded, Value& value);
  // At the '{' or '[' that opens nesting level `depth`: checks it through its close, iteratively.
  bool SkipContainer(int depth);
  // The value of a known field: sets `out_`, or notes a field error and goes on.
  bool ReadField(Field field);
  bool ReadPrefixHashes();
  void FieldError(std::string_view message);
  void FieldError(Field field, std::string_view problem);

  std::string_view body_;
  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  PickBody& out_;
  PickBodyScratch& scratch_;
  bool prefix_hashes_given_ = false;
  std::string syntax_error_;
  std::string field_error_;  // the first
};

bool Parser::Fail(std::size_t at, std::string_view what) {
  if (at >= size_) {
    at = size_;
    what = kUnexpectedEnd;
  }
  syntax_error_ = "body: not valid JSON at byte ";
  syntax_error_ += std::to_string(at);
  syntax_error_ += ": ";
  syntax_error_ += what;
  return false;
}

bool Parser::FailDepth(std::size_t at) {
  syntax_error_ = "body: objects and arrays nested deeper than ";
  syntax_error_ += std::to_string(kMaxPickBodyDepth);
  syntax_error_ += " at byte ";
  syntax_error_ += std::to_string(at);
  return false;
}

void Parser::SkipWhitespace() {
  while (pos_ < size_) {
    const char c = data_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

bool Parser::Expect(char c, std::string_view what) {
  if (!At(c)) return Fail(pos_, what);
  ++pos_;
  return true;
}

bool Parser::ReadString(std::string* decoded, std::string_view& text) {
  ++pos_;  // the opening '"'
  const std::size_t start = pos_;
  std::size_t copied = start;  // the first byte not yet appended to *decoded
  bool escaped = false;
  for (;;) {
    pos_ = FindStringSpecial(data_, pos_, size_);
    if (pos_ >= size_) return Fail(size_, kUnexpectedEnd);
    const char c = data_[pos_];
    if (c == '"') {
      if (escaped && decoded != nullptr) {
        decoded->append(data_ + copied, pos_ - copied);
        text = *decoded;
      } else {
        text = body_.substr(start, pos_ - start);
      }
      ++pos_;
      return true;
    }
    if (c != '\\') return Fail(pos_, "control character in a string");
    if (decoded != nullptr) {
      if (!escaped) decoded->clear();
      decoded->append(data_ + copied, pos_ - copied);
    }
    escaped = true;
    if (!ReadEscape(decoded)) return false;
    copied = pos_;
  }
}

bool Parser::ReadHex4(std::size_t at, std::uint32_t& unit) {
  unit = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    if (i >= size_) return Fail(size_, kUnexpectedEnd);
    const char c = data_[i];
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return Fail(i, "expected 4 hex digits after \\u");
    }
    unit = unit * 16 + digit;
  }
  return true;
}

bool Parser::ReadEscape(std::string* decoded) {
  const std::size_t at = pos_;  // the '\\'
  if (at + 1 >= size_) return Fail(size_, kUnexpectedEnd);
  char simple = 0;
  switch (data_[at + 1]) {
    case '"':
      simple = '"';
      break;
    case '\\':
      simple = '\\';
      break;
    case '/':
      simple = '/';
      break;
    case 'b':
      simple = '\b';
      break;
    case 'f':
      simple = '\f';
      break;
    case 'n':
      simple = '\n';
      break;
    case 'r':
      simple = '\r';
      break;
    case 't':
      simple = '\t';
      break;
    case 'u':
      break;
    default:
      return Fail(at, "invalid escape");
  }
  if (simple != 0) {
    if (decoded != nullptr) *decoded += simple;
    pos_ = at + 2;
    return true;
  }
  std::uint32_t unit = 0;
  if (!ReadHex4(at + 2, unit)) return false;
  std::uint32_t code_point = unit;
  pos_ = at + 6;
  if (unit >= 0xDC00 && unit <= 0xDFFF) return Fail(at, "lone surrogate");
  if (unit >= 0xD800 && unit <= 0xDBFF) {
    // Must be followed by "\u" and a low surrogate.
    if (pos_ >= size_ || (data_[pos_] == '\\' && pos_ + 1 >= size_)) {
      return Fail(size_, kUnexpectedEnd);
    }
    if (data_[pos_] != '\\' || data_[pos_ + 1] != 'u') return Fail(at, "lone surrogate");
    std::uint32_t low = 0;
    if (!ReadHex4(pos_ + 2, low)) return false;
    if (low < 0xDC00 || low > 0xDFFF) return Fail(at, "lone surrogate");
    code_point = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    pos_ += 6;
  }
  if (decoded != nullptr) AppendUtf8(*decoded, code_point);
  return true;
}

bool Parser::ReadNumber(Value& value) {
  const std::size_t start = pos_;
  value.kind = Value::Kind::kNumber;
  value.whole = true;
  if (At('-')) {
    value.whole = false;
    ++pos_;
  }
  if (At('0')) {
    ++pos_;
    if (pos_ < size_ && IsDigit(data_[pos_])) return Fail(pos_, "leading zero in a number");
  } else if (pos_ < size_ && IsDigit(data_[pos_])) {
    while (pos_ < size_ && IsDigit(data_[pos_])) ++pos_;
  } else {
    return Fail(pos_, "expected a digit");
  }
  if (At('.')) {
    value.whole = false;
    ++pos_;
    if (pos_ >= size_ || !IsDigit(data_[pos_])) return Fail(pos_, "expected a digit");
    while (pos_ < size_ && IsDigit(data_[pos_])) ++pos_;
  }
  if (At('e') || At('E')) {
    value.whole = false;
    ++pos_;
    if (At('+') || At('-')) ++pos_;
    if (pos_ >= size_ || !IsDigit(data_[pos_])) return Fail(pos_, "expected a digit");
    while (pos_ < size_ && IsDigit(data_[pos_])) ++pos_;
  }
  value.text = body_.substr(start, pos_ - start);
  return true;
}

bool Parser::ReadLiteral(std::string_view word) {
  const std::string_view rest = body_.substr(pos_);
  if (rest.starts_with(word)) {
    pos_ += word.size();
    return true;
  }
  // A body cut short in the middle of the word ends too soon; anything else is no value.
  if (rest.size() < word.size() && word.starts_with(rest)) return Fail(size_, kUnexpectedEnd);
  return Fail(pos_, "expected a value");
}

bool Parser::ReadScalar(std::string* decoded, Value& value) {
  if (pos_ >= size_) return Fail(pos_, kUnexpectedEnd);
  switch (data_[pos_]) {
    case '"':
      value.kind = Value::Kind::kString;
      return ReadString(decoded, value.text);
    case 't':
      value.kind = Value::Kind::kTrue;
      return ReadLiteral("true");
    case 'f':
      value.kind = Value::Kind::kFalse;
      return ReadLiteral("false");
    case 'n':
      value.kind = Value::Kind::kNull;
      return ReadLiteral("null");
    default:
      if (data_[pos_] == '-' || IsDigit(data_[pos_])) return ReadNumber(value);
      return Fail(pos_, "expected a value");
  }
}

bool Parser::ReadValue(int depth, std::string* decoded, Value& value) {
  if (At('{') || At('[')) {
    value.kind = Value::Kind::kContainer;
    return SkipContainer(depth);
  }
  return ReadScalar(decoded, value);
}

bool Parser::SkipContainer(int depth) {
  // Bit i of `arrays` says whether the i-th level open here is an array (else an object); `open`
  // counts them. At most kMaxPickBodyDepth - 1 levels are open here, as the body's object is one.
  static_assert(kMaxPickBodyDepth <= 64, "one bit per level in a std::uint64_t");
  std::uint64_t arrays = 0;
  int open = 0;
  bool opening = true;     // at a '{' or '[' that opens a level
  bool need_value = true;  // a member or element comes next
  for (;;) {
    if (opening) {
      if (depth + open > kMaxPickBodyDepth) return FailDepth(pos_);
      const std::uint64_t bit = std::uint64_t{1} << open;
      arrays = data_[pos_] == '[' ? (arrays | bit) : (arrays & ~bit);
      ++open;
      ++pos_;
      opening = false;
      SkipWhitespace();
      const bool in_array = ((arrays >> (open - 1)) & 1U) != 0;
      if (At(in_array ? ']' : '}')) {
        ++pos_;
        if (--open == 0) return true;
        need_value = false;
        continue;
      }
      need_value = true;
    }
    const bool in_array = ((arrays >> (open - 1)) & 1U) != 0;
    if (need_value) {
      SkipWhitespace();
      if (!in_array) {
        if (!At('"')) return Fail(pos_, "expected a string key");
        std::string_view key;
        if (!ReadString(nullptr, key)) return false;
        SkipWhitespace();
        if (!Expect(':', "expected ':'")) return false;
        SkipWhitespace();
      }
      if (At('{') || At('[')) {
        opening = true;
        continue;
      }
      Value value;
      if (!ReadScalar(nullptr, value)) return false;
      need_value = false;
      continue;
    }
    SkipWhitespace();
    if (At(',')) {
      ++pos_;
      need_value = true;
      continue;
    }
    if (!At(in_array ? ']' : '}')) {
      return Fail(pos_, in_array ? "expected ',' or ']'" : "expected ',' or '}'");
    }
    ++pos_;
    if (--open == 0) return true;
  }
}

void Parser::FieldError(std::string_view message) {
  if (field_error_.empty()) field_error_ = message;
}

void Parser::FieldError(Field field, std::string_view problem) {
  if (!field_error_.empty()) return;
  field_error_ = NameOf(field);
  field_error_ += ": ";
  field_error_ += problem;
}

bool Parser::ReadPrefixHashes() {
  if (!At('[')) {
    Value value;
    if (!ReadValue(2, nullptr, value)) return false;
    if (value.kind != Value::Kind::kNull) FieldError(Field::kPrefixHashes, "must be an array");
    return true;
  }
  prefix_hashes_given_ = true;
  ++pos_;
  SkipWhitespace();
  if (At(']')) {
    ++pos_;
    return true;
  }
  for (std::size_t index = 0;; ++index) {
    SkipWhitespace();
    Value value;
    if (!ReadValue(3, &scratch_.element, value)) return false;
    const std::optional<routing::BlockHash> hash =
        value.kind == Value::Kind::kString ? routing::ParseBlockHash(value.text) : std::nullopt;
    if (!hash) {
      if (field_error_.empty()) {
        field_error_ = "prefix_hashes[" + std::to_string(index) + "]: must be 16 hex digits";
      }
    } else if (out_.prefix_hashes.size() < routing::kMaxPrefixBlocks) {
      out_.prefix_hashes.push_back(*hash);
    }
    SkipWhitespace();
    if (At(',')) {
      ++pos_;
      continue;
    }
    return Expect(']', "expected ',' or ']'");
  }
}

bool Parser::ReadField(Field field) {
  if (field == Field::kPrefixHashes) return ReadPrefixHashes();
  std::string* decoded = nullptr;
  switch (field) {
    case Field::kPool:
      decoded = &scratch_.pool;
      break;
    case Field::kModel:
      decoded = &scratch_.model;
      break;
    case Field::kSessionId:
      decoded = &scratch_.session_id;
      break;
    case Field::kPrompt:
      decoded = &scratch_.prompt;
      break;
    default:
      break;
  }
  Value value;
  if (!ReadValue(2, decoded, value)) return false;
  if (value.kind == Value::Kind::kNull) return true;  // absent
  const bool is_string = value.kind == Value::Kind::kString;
  switch (field) {
    case Field::kPool:
      if (!is_string) {
        FieldError(field, "must be a string");
      } else if (value.text.empty()) {
        FieldError(field, "must not be empty");
      } else {
        out_.pool = value.text;
      }
      break;
    case Field::kModel:
      if (!is_string) {
        FieldError(field, "must be a string");
      } else if (value.text.size() > routing::kMaxModelNameBytes) {
        FieldError(field, "at most " + std::to_string(routing::kMaxModelNameBytes) + " bytes");
      } else {
        out_.model = value.text;
      }
      break;
    case Field::kSessionId:
      if (!is_string) {
        FieldError(field, "must be a string");
      } else if (value.text.empty()) {
        FieldError(field, "must not be empty");
      } else if (value.text.size() > routing::kMaxSessionIdBytes) {
        FieldError(field, "at most " + std::to_string(routing::kMaxSessionIdBytes) + " bytes");
      } else {
        out_.session_id = value.text;
      }
      break;
    case Field::kPrompt:
      if (!is_string) {
        FieldError(field, "must be a string");
      } else {
        out_.prompt = value.text;
      }
      break;
    case Field::kPromptTokens:
    case Field::kExpectedTokens: {
      const std::optional<std::int64_t> n = WholeNumber(value, kMaxPickTokens);
      if (!n) {
        FieldError(field, "must be a whole number from 0 to " + std::to_string(kMaxPickTokens));
      } else if (field == Field::kPromptTokens) {
        out_.prompt_tokens = *n;
      } else {
        out_.expected_tokens = *n;
      }
      break;
    }
    case Field::kWaitMs: {
      const std::optional<std::int64_t> n = WholeNumber(value, kMaxPickWaitMs);
      if (!n) {
        FieldError(field, "must be a whole number from 0 to " + std::to_string(kMaxPickWaitMs));
      } else {
        out_.wait_ms = *n;
      }
      break;
    }
    case Field::kPrefixHashes:
    case Field::kUnknown:
      break;
  }
  return true;
}

std::string Parser::Run() {
  SkipWhitespace();
  if (!At('{')) return "body: expected a JSON object";
  ++pos_;
  SkipWhitespace();
  std::uint32_t seen = 0;  // bit i: kFieldNames[i] was given
  if (At('}')) {
    ++pos_;
  } else {
    for (;;) {
      SkipWhitespace();
      if (!At('"')) {
        Fail(pos_, "expected a string key");
        return syntax_error_;
      }
      std::string_view key;
      if (!ReadString(&scratch_.key, key)) return syntax_error_;
      SkipWhitespace();
      if (!Expect(':', "expected ':'")) return syntax_error_;
      SkipWhitespace();
      const Field field = FieldOf(key);
      bool ok = true;
      if (field == Field::kUnknown) {
        Value value;
        ok = ReadValue(2, nullptr, value);
      } else {
        const std::uint32_t bit = 1U << static_cast<unsigned>(field);
        if ((seen & bit) != 0) {
          FieldError("field \"" + std::string(NameOf(field)) + "\" appears twice");
        }
        seen |= bit;
        ok = ReadField(field);
      }
      if (!ok) return syntax_error_;
      SkipWhitespace();
      if (At(',')) {
        ++pos_;
        continue;
      }
      if (!Expect('}', "expected ',' or '}'")) return syntax_error_;
      break;
    }
  }
  SkipWhitespace();
  if (pos_ != size_) {
    Fail(pos_, "unexpected data after the object");
    return syntax_error_;
  }
  if (!field_error_.empty()) return field_error_;
  if (out_.pool.empty()) return "pool: required";
  if (prefix_hashes_given_ && out_.prompt) return "give prefix_hashes or prompt, not both";
  return {};
}

void Reset(PickBody& out) {
  out.pool = {};
  out.model = {};
  out.session_id.reset();
  out.prompt_tokens = 0;
  out.expected_tokens = 0;
  out.prefix_hashes.clear();
  out.prompt.reset();
  out.wait_ms.reset();
}

}  // namespace

std::string ParsePickBody(std::string_view body, PickBody& out, PickBodyScratch& scratch) {
  Reset(out);
  std::string error = Parser(body, out, scratch).Run();
  if (!error.empty()) Reset(out);
  return error;
}

}  // namespace eoc::server
