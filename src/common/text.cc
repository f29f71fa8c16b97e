#include "common/text.h"

#include <openssl/evp.h>

#include <algorithm>

namespace eoc {

namespace {

// Appends `value`'s first `max_bytes` bytes, each byte outside printable ASCII and each of
// `escaped` written \xNN.
void AppendEscaped(std::string& out, std::string_view value, std::size_t max_bytes,
                   std::string_view escaped) {
  constexpr std::string_view kHex = "0123456789abcdef";
  for (const char c : value.substr(0, max_bytes)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7F && escaped.find(c) == std::string_view::npos) {
      out.push_back(c);
    } else {
      out.append("\\x").push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 0xFU]);
    }
  }
}

}  // namespace

std::string Quoted(std::string_view value) {
  constexpr std::size_t kMaxShown = 100;
  std::string out = "\"";
  AppendEscaped(out, value, kMaxShown, "\"\\");
  out.append(value.size() > kMaxShown ? "\"..." : "\"");
  return out;
}

std::string Printable(std::string_view value, std::size_t max_bytes) {
  std::string out;
  AppendEscaped(out, value, max_bytes, "\\");
  if (value.size() > max_bytes) out.append("...");
  return out;
}

std::vector<std::string> SplitPathList(std::string_view list) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t end = std::min(list.find(':', start), list.size());
    parts.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

std::string_view TrimWhitespace(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\r\n\v\f";
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

std::string Base64Encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Standard base64 with padding, as Go encodes []byte in kubeconfig; line breaks are ignored.
std::optional<std::string> Base64Decode(std::string_view text) {
  std::string compact;
  for (const char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') compact.push_back(c);
  }
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string_view all(compact);
  const std::size_t body = std::min(all.find('='), all.size());  // padding only at the end
  const std::size_t padding = all.size() - body;
  if (all.size() % 4 != 0 || padding > 2 ||
      all.substr(0, body).find_first_not_of(kAlphabet) != std::string_view::npos ||
      all.find_first_not_of('=', body) != std::string_view::npos) {
    return std::nullopt;
  }
  std::string out(compact.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(compact.data()),
                                static_cast<int>(compact.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - padding);  // EVP_DecodeBlock counts padding as zeros
  return out;
}

}  // namespace eoc
