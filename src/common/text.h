// Small text helpers shared by the modules: trimming, list splitting, quoting values in error
// messages, and base64.
//
//   eoc::TrimWhitespace("  token\n")          // "token"
//   eoc::SplitPathList("a::b")                // {"a", "", "b"}
//   "server " + eoc::Quoted(value) + " is not a URL"
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace eoc {

// A hash that takes a string_view, so that a lookup in a map keyed by std::string builds none.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
// A map keyed by strings that `find`s by string_view without allocating.
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// `value` in double quotes for an error message, cut short after 100 bytes (values come from files,
// plugins and remote answers, and may be megabytes long), every byte outside printable ASCII and
// every `"` and `\` written \xNN: the message is one line of ASCII whatever the value holds (no
// forged log lines, and valid UTF-8 in an object's status).
std::string Quoted(std::string_view value);

// The first `max_bytes` bytes of `value` as one line of printable ASCII: every byte outside it
// and every `\` written \xNN, and "..." after a value cut short. For text from outside the
// process that is kept to be shown (an API server's error message, a proxy's error page).
std::string Printable(std::string_view value, std::size_t max_bytes);

// A colon-separated list ($PATH, $KUBECONFIG) split into its entries, empty ones included
// ("a::b" gives "a", "", "b"; "" gives one empty entry), as each list gives those its own meaning.
std::vector<std::string> SplitPathList(std::string_view list);

// `parts` with `separator` between them: Join({"a", "b"}, ", ") is "a, b" (an empty part adds
// no separator before the next).
std::string Join(const std::vector<std::string>& parts, std::string_view separator);

// `text` without leading and trailing ASCII whitespace.
std::string_view TrimWhitespace(std::string_view text);

// Standard base64 with padding.
std::string Base64Encode(std::string_view data);
// Standard base64 with padding, as Go encodes []byte; line breaks and spaces are ignored. nullopt
// for anything else.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace eoc
