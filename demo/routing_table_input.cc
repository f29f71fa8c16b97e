#include "routing_table_input.h"

#include <charconv>
#include <cstddef>
#include <string>
#include <unordered_map>

#include "common/routing_terms.h"
#include "routing/weights.h"

namespace eoc::demo {

std::string Quote(std::string_view line) {
  std::string out = "\"";
  for (const char c : line.substr(0, 60)) out += c >= ' ' && c <= '~' ? c : '?';
  return out + (line.size() > 60 ? "...\"" : "\"");
}

std::string StrategyNames() {
  std::string out;
  for (std::size_t i = 0; i < kStrategyNames.size(); ++i) {
    if (i > 0) out += i + 1 == kStrategyNames.size() ? " or " : ", ";
    out += kStrategyNames[i].name;
  }
  return out;
}

namespace {

std::string LineError(std::size_t number, std::string_view what) {
  return "stdin line " + std::to_string(number) + ": " + std::string(what);
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// The next line of `in` into `line`, without its newline; false at the end of the input. Throws
// InputError for a line longer than kMaxLineBytes, without reading the rest of it.
bool ReadLine(std::istream& in, std::string& line, std::size_t number) {
  line.clear();
  bool any = false;
  char c = 0;
  while (in.get(c)) {
    any = true;
    if (c == '\n') return true;
    if (line.size() == kMaxLineBytes) {
      throw InputError(
          LineError(number, "longer than " + std::to_string(kMaxLineBytes) + " bytes"));
    }
    line.push_back(c);
  }
  return any;
}

}  // namespace

std::vector<Row> ReadTable(std::istream& in) {
  std::vector<Row> rows;
  std::unordered_map<std::string, std::size_t> line_of;  // pod -> its line
  std::string line;
  for (std::size_t number = 1; ReadLine(in, line, number); ++number) {
    if (number > kMaxLines) {
      throw InputError(
          LineError(number, "more than " + std::to_string(kMaxLines) + " lines (workers)"));
    }
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() != 3) {
      throw InputError(LineError(number, "want POD ADDRESS WEIGHT, got " +
                                             std::to_string(fields.size()) +
                                             " fields: " + Quote(line)));
    }
    const std::string_view text = fields[2];
    std::int64_t weight = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), weight);
    if (error != std::errc{} || end != text.data() + text.size() || weight < 0 ||
        weight > eoc::routing::kMaxWeight) {
      throw InputError(LineError(number, "weight " + Quote(text) + " is not an integer 0-" +
                                             std::to_string(eoc::routing::kMaxWeight)));
    }
    Row row{.pod = std::string(fields[0]),
            .address = std::string(fields[1]),
            .weight = static_cast<std::int32_t>(weight)};
    if (const auto [it, added] = line_of.emplace(row.pod, number); !added) {
      throw InputError(LineError(number, "pod " + Quote(row.pod) + " is listed already, on line " +
                                             std::to_string(it->second)));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    throw InputError(
        "stdin: no workers (want one `POD ADDRESS WEIGHT` a line, as "
        "status.routing.workers lists them)");
  }
  return rows;
}

}  // namespace eoc::demo
