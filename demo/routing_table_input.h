// The demo's input: a pool's published routing table, one worker a line (`POD ADDRESS WEIGHT`, as
// `kubectl get inferencepool NAME -o jsonpath=...` prints status.routing.workers), read within
// bounds, with errors that name the line.
//
//   std::vector<Row> rows = ReadTable(std::cin);   // throws InputError: "stdin line 3: ..."
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::demo {

// Input bounds: the routing table's own limit of workers, and a line far longer than any.
inline constexpr std::size_t kMaxLines = 2000;
inline constexpr std::size_t kMaxLineBytes = 4096;

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One worker of the table.
struct Row {
  std::string pod;
  std::string address;
  std::int32_t weight = 0;
};

// The table on `in`: `POD ADDRESS WEIGHT` a line, blank lines skipped; weights 0-1000, each pod
// once, at least one. Throws InputError.
std::vector<Row> ReadTable(std::istream& in);

// At most 60 bytes of `line`, non-printable bytes as '?', quoted.
std::string Quote(std::string_view line);

// "RoundRobin, LeastBusy, ... or CarbonWeighted", from the one table of strategy names.
std::string StrategyNames();

}  // namespace eoc::demo
