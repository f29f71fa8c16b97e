#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/bounded_json.h"
#include "common/mix64.h"
#include "common/rfc3339.h"
#include "common/text.h"

namespace eoc::sim {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20U;
constexpr std::size_t kMaxRequests = 10'000'000;
constexpr std::int64_t kMaxTokens = 10'000'000;
constexpr std::size_t kMaxHashIds = std::size_t{1} << 16U;
// A Mooncake row nests two levels (an object holding hash_ids); 16 leaves room for members we
// ignore, and bounds what later recursion on a row's values (a message's excerpt) could meet.
constexpr std::size_t kMaxMooncakeRowDepth = 16;
constexpr std::int32_t kMooncakeBlockTokens = 512;
constexpr std::int32_t kMaxBlockTokens = 1 << 20;
constexpr std::int32_t kMaxPrefixTokens = 1 << 20;
constexpr std::size_t kMaxSharedPrefixes = std::size_t{1} << 20U;
constexpr double kMaxMeanTurns = 1e6;
// About 317 years of milliseconds: past that a Mooncake timestamp is not a time.
constexpr double kMaxTimestampMs = 1e13;
// Azure years ParseRfc3339 can hold: its nanosecond clock covers 1678 to 2262, and differences
// between two rows must fit in it too.
constexpr int kMinYear = 1970;
constexpr int kMaxYear = 2199;
// How far a row may be before the previous one (rounding in a converted trace); such a row is
// taken to arrive with the previous one. A millisecond is nothing to a serving simulation.
constexpr double kOrderToleranceSeconds = 1e-3;
constexpr std::string_view kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";
constexpr std::string_view kBom = "\xEF\xBB\xBF";
// h_0 of the hash chains (the header's formula): the golden ratio's 64 bits, any odd constant
// would do; it keeps the first hash away from Mix64(0) = 0.
constexpr std::uint64_t kChainBasis = 0x9E3779B97F4A7C15ULL;

// Each use of the seed draws from its own stream, so that changing one model (say, sessions off)
// leaves the others' draws (the copies, the prefixes) as they were.
enum class Stream : std::uint64_t { kRate = 1, kSessions = 2, kPrefixes = 3, kUniqueBlocks = 4 };

// SplitMix64: small, fast, and the same numbers on every platform and standard library (the
// std:: distributions are not), which a reproducible simulation needs.
class Rng {
 public:
  Rng(std::uint64_t seed, Stream stream)
      : state_(Mix64(seed) ^ Mix64(static_cast<std::uint64_t>(stream) * kChainBasis)) {}

  std::uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return Mix64(state_);
  }
  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11U) * 0x1.0p-53; }
  bool Chance(double p) { return Uniform() < p; }
  // Uniform in [0, n) for n > 0, without modulo bias.
  std::uint64_t Below(std::uint64_t n) {
    const std::uint64_t reject_under = (0 - n) % n;  // 2^64 mod n
    std::uint64_t r = Next();
    while (r < reject_under) r = Next();
    return r % n;
  }
  // The number of failures before the first success of a coin with success probability p in
  // (0, 1]: geometric, mean (1 - p) / p.
  std::uint64_t Failures(double p) {
    if (p >= 1) return 0;
    const double u = 1 - Uniform();  // (0, 1]
    return static_cast<std::uint64_t>(std::floor(std::log(u) / std::log1p(-p)));
  }

 private:
  std::uint64_t state_;
};

std::uint64_t ChainNext(std::uint64_t previous, std::uint64_t id) {
  return Mix64(previous ^ Mix64(id));
}

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

[[noreturn]] void Fail(const std::string& name, const std::string& what) {
  throw TraceError(name + ": " + what);
}

[[noreturn]] void FailAt(const std::string& name, std::size_t line, const std::string& what) {
  throw TraceError(name + ":" + std::to_string(line) + ": " + what);
}

void CheckOptions(const TraceOptions& o, const std::string& name) {
  const auto fail = [&](const std::string& option, double value, const std::string& rule) {
    Fail(name, "option " + option + " is " + Number(value) + "; it must be " + rule);
  };
  // Written as !(in range) so that NaN fails too.
  if (!(o.time_scale > 0 && std::isfinite(o.time_scale))) {
    fail("time_scale", o.time_scale, "positive and finite");
  }
  if (!(o.rate_scale >= 0 && o.rate_scale <= static_cast<double>(kMaxRequests))) {
    fail("rate_scale", o.rate_scale, "from 0 to 10,000,000");
  }
  if (!(o.start_seconds >= 0 && std::isfinite(o.start_seconds))) {
    fail("start_seconds", o.start_seconds, "zero or positive and finite");
  }
  if (o.duration_seconds && !(*o.duration_seconds > 0 && std::isfinite(*o.duration_seconds))) {
    fail("duration_seconds", *o.duration_seconds, "positive and finite");
  }
  if (o.block_size_tokens < 1 || o.block_size_tokens > kMaxBlockTokens) {
    fail("block_size_tokens", o.block_size_tokens, "from 1 to 1,048,576");
  }
  if (!(o.sessions.share >= 0 && o.sessions.share <= 1)) {
    fail("sessions.share", o.sessions.share, "from 0 to 1");
  }
  if (!(o.sessions.mean_turns >= 2 && o.sessions.mean_turns <= kMaxMeanTurns)) {
    fail("sessions.mean_turns", o.sessions.mean_turns, "from 2 to 1,000,000");
  }
  if (o.sessions.max_open < 1) {
    fail("sessions.max_open", static_cast<double>(o.sessions.max_open), "at least 1");
  }
  if (!(o.prefixes.shared_share >= 0 && o.prefixes.shared_share <= 1)) {
    fail("prefixes.shared_share", o.prefixes.shared_share, "from 0 to 1");
  }
  if (o.prefixes.shared_prefixes < 1 || o.prefixes.shared_prefixes > kMaxSharedPrefixes) {
    fail("prefixes.shared_prefixes", static_cast<double>(o.prefixes.shared_prefixes),
         "from 1 to 1,048,576");
  }
  if (!(o.prefixes.zipf_s >= 0 && std::isfinite(o.prefixes.zipf_s))) {
    fail("prefixes.zipf_s", o.prefixes.zipf_s, "zero or positive and finite");
  }
  if (o.prefixes.min_tokens < 1 || o.prefixes.min_tokens > o.prefixes.max_tokens ||
      o.prefixes.max_tokens > kMaxPrefixTokens) {
    Fail(name, "options prefixes.min_tokens and max_tokens are " +
                   std::to_string(o.prefixes.min_tokens) + " and " +
                   std::to_string(o.prefixes.max_tokens) +
                   "; they must be 1 <= min_tokens <= max_tokens <= 1,048,576");
  }
}

// The lines of a stream without their "\n" or "\r\n", each at most kMaxLineBytes long. The
// buffer is allocated once, so that a line without an end cannot grow memory.
class LineReader {
 public:
  LineReader(std::istream& in, const std::string& name)
      : in_(in), name_(name), buffer_(kMaxLineBytes + 2) {}

  // The next line, valid until the next call; nullopt at the end of the input.
  std::optional<std::string_view> Next() {
    in_.getline(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    if (in_.bad()) FailAt(name_, line_ + 1, "cannot read the line");
    const auto extracted = static_cast<std::size_t>(in_.gcount());
    if (extracted == 0) {
      if (in_.eof()) return std::nullopt;
      // Nothing read and no end: the stream was failed before this call.
      FailAt(name_, line_ + 1, "cannot read the line");
    }
    ++line_;
    // Failing without reaching the end means the buffer filled before a "\n".
    if (in_.fail() && !in_.eof()) FailAt(name_, line_, "the line is longer than 1 MiB");
    // The count includes the "\n", except on a last line that has none.
    std::string_view text(buffer_.data(), in_.eof() ? extracted : extracted - 1);
    if (line_ == 1 && text.starts_with(kBom)) text.remove_prefix(kBom.size());
    if (text.ends_with('\r')) text.remove_suffix(1);
    if (text.size() > kMaxLineBytes) FailAt(name_, line_, "the line is longer than 1 MiB");
    return text;
  }
  // The next line that is not blank.
  std::optional<std::string_view> NextNonBlank() {
    std::optional<std::string_view> text;
    do {
      text = Next();
    } while (text && TrimWhitespace(*text).empty());
    return text;
  }
  std::size_t line() const { return line_; }

 private:
  std::istream& in_;
  const std::string& name_;
  std::vector<char> buffer_;
  std::size_t line_ = 0;
};

// One request as a file gives it.
struct Row {
  double seconds = 0;  // from the file's first request, on the original timeline
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  std::vector<std::uint64_t> ids;  // Mooncake's hash ids
};

// A token count of a CSV field: a whole number from 0 to kMaxTokens.
std::int32_t CsvTokens(std::string_view field, std::string_view column, const std::string& name,
                       std::size_t line) {
  const std::string_view text = TrimWhitespace(field);
  const std::string what = std::string(column) + " " + Quoted(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range) {
    FailAt(name, line, what + (text.starts_with('-') ? " is negative" : " is absurdly large"));
  }
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    FailAt(name, line, what + " is not a whole number");
  }
  if (value < 0) FailAt(name, line, what + " is negative");
  if (value > kMaxTokens) FailAt(name, line, what + " is over 10,000,000 tokens, not a real count");
  return static_cast<std::int32_t>(value);
}

// An Azure TIMESTAMP ("2023-11-16 18:17:03.9799600", UTC) in nanoseconds since 1970.
std::int64_t AzureNanoseconds(std::string_view field, const std::string& name, std::size_t line) {
  const std::string_view text = TrimWhitespace(field);
  const auto fail = [&] {
    FailAt(name, line,
           "TIMESTAMP " + Quoted(text) + " is not a UTC time like 2023-11-16 18:17:03.9799600");
  };
  int year = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + std::min<std::size_t>(4, text.size()), year);
  if (text.size() < 19 || error != std::errc() || end != text.data() + 4 || text[10] != ' ') {
    fail();
  }
  // Checked before parsing: ParseRfc3339's nanosecond clock overflows far from 1970.
  if (year < kMinYear || year > kMaxYear) {
    FailAt(name, line, "TIMESTAMP " + Quoted(text) + " is not between 1970 and 2199");
  }
  std::string iso(text);
  iso[10] = 'T';
  iso += 'Z';
  const auto time = ParseRfc3339(iso);
  if (!time) fail();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(time->time_since_epoch()).count();
}

struct AzureRow {
  std::int64_t nanoseconds = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
};

AzureRow ParseAzureRow(std::string_view text, const std::string& name, std::size_t line) {
  std::vector<std::string_view> fields;
  for (std::size_t from = 0;;) {
    const std::size_t comma = text.find(',', from);
    fields.push_back(text.substr(from, comma == std::string_view::npos ? comma : comma - from));
    if (comma == std::string_view::npos || fields.size() > 3) break;
    from = comma + 1;
  }
  if (fields.size() != 3) {
    FailAt(name, line,
           "expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), found " +
               std::string(fields.size() > 3 ? "more" : std::to_string(fields.size())));
  }
  AzureRow row;
  row.nanoseconds = AzureNanoseconds(fields[0], name, line);
  row.prompt_tokens = CsvTokens(fields[1], "ContextTokens", name, line);
  row.output_tokens = CsvTokens(fields[2], "GeneratedTokens", name, line);
  return row;
}

// A JSON number that must be whole and from 0 to `max` (integral floats such as 512.0 count).
double JsonWhole(const json& object, const char* member, double max, const std::string& name,
                 std::size_t line) {
  const auto it = object.find(member);
  if (it == object.end()) FailAt(name, line, std::string("no \"") + member + "\" member");
  if (!it->is_number()) {
    FailAt(name, line,
           std::string("\"") + member + "\" is " + DescribeJson(*it) + ", not a number");
  }
  const double value = it->get<double>();
  const std::string what = std::string("\"") + member + "\" " + DescribeJson(*it);
  if (value != std::floor(value)) FailAt(name, line, what + " is not a whole number");
  if (value < 0) FailAt(name, line, what + " is negative");
  if (value > max) FailAt(name, line, what + " is absurdly large");
  return value;
}

struct MooncakeRow {
  double milliseconds = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  std::vector<std::uint64_t> ids;
};

MooncakeRow ParseMooncakeRow(std::string_view text, const std::string& name, std::size_t line) {
  std::string error;
  const std::optional<json> parsed = ParseBoundedJson(
      text, {.max_depth = kMaxMooncakeRowDepth, .max_bytes = kMaxLineBytes}, error);
  if (!parsed) FailAt(name, line, error);
  const json& object = *parsed;
  if (!object.is_object()) FailAt(name, line, "not a JSON object");
  MooncakeRow row;
  row.milliseconds = JsonWhole(object, "timestamp", kMaxTimestampMs, name, line);
  const auto tokens = [&](const char* member) {
    return static_cast<std::int32_t>(
        JsonWhole(object, member, static_cast<double>(kMaxTokens), name, line));
  };
  row.prompt_tokens = tokens("input_length");
  row.output_tokens = tokens("output_length");
  const auto ids = object.find("hash_ids");
  if (ids == object.end()) FailAt(name, line, "no \"hash_ids\" member");
  if (!ids->is_array()) FailAt(name, line, "\"hash_ids\" is not an array");
  if (ids->size() > kMaxHashIds) {
    FailAt(name, line,
           "\"hash_ids\" has " + std::to_string(ids->size()) + " ids, more than 65,536");
  }
  // Ids past the prompt (more than its blocks, counting a partial last one) name nothing.
  const std::size_t keep =
      std::min(ids->size(), static_cast<std::size_t>(row.prompt_tokens / kMooncakeBlockTokens) + 1);
  row.ids.reserve(keep);
  for (std::size_t i = 0; i < keep; ++i) {
    const json& id = (*ids)[i];
    if (id.is_number_unsigned()) {
      row.ids.push_back(id.get<std::uint64_t>());
    } else if (id.is_number_integer()) {
      row.ids.push_back(static_cast<std::uint64_t>(id.get<std::int64_t>()));
    } else {
      FailAt(name, line,
             "hash_ids[" + std::to_string(i) + "] is " + DescribeJson(id) + ", not an integer");
    }
  }
  return row;
}

// The rows of the cut, and where the original timeline goes on after it.
struct Cut {
  std::vector<Row> rows;
  // The first row past the cut, capped at the cut's end (seconds on the original timeline);
  // nullopt when the file ended first.
  std::optional<double> next_seconds;
  double last_seconds_read = 0;
  std::size_t rows_read = 0;
};

// Reads the rows after the header (Azure) or from `first_line` on (Mooncake) into the cut,
// stopping at the first row past it.
Cut ReadCut(LineReader& lines, TraceFormat format, std::optional<std::string_view> first_line,
            const TraceOptions& options, const std::string& name) {
  Cut cut;
  const double end = options.duration_seconds ? options.start_seconds + *options.duration_seconds
                                              : std::numeric_limits<double>::infinity();
  const std::int32_t block_tokens =
      format == TraceFormat::kAzureCsv ? options.block_size_tokens : kMooncakeBlockTokens;
  std::optional<std::int64_t> first_nanoseconds;  // Azure
  std::optional<double> first_milliseconds;       // Mooncake
  double previous = 0;
  std::size_t blocks = 0;
  for (std::optional<std::string_view> text = first_line ? first_line : lines.NextNonBlank(); text;
       text = lines.NextNonBlank()) {
    const std::size_t line = lines.line();
    Row row;
    if (format == TraceFormat::kAzureCsv) {
      const AzureRow azure = ParseAzureRow(*text, name, line);
      if (!first_nanoseconds) first_nanoseconds = azure.nanoseconds;
      row.seconds = static_cast<double>(azure.nanoseconds - *first_nanoseconds) / 1e9;
      row.prompt_tokens = azure.prompt_tokens;
      row.output_tokens = azure.output_tokens;
    } else {
      MooncakeRow mooncake = ParseMooncakeRow(*text, name, line);
      if (!first_milliseconds) first_milliseconds = mooncake.milliseconds;
      row.seconds = (mooncake.milliseconds - *first_milliseconds) / 1000;
      row.prompt_tokens = mooncake.prompt_tokens;
      row.output_tokens = mooncake.output_tokens;
      row.ids = std::move(mooncake.ids);
    }
    if (row.seconds < previous - kOrderToleranceSeconds) {
      FailAt(name, line,
             "the request is " + Number(previous - row.seconds) +
                 " s earlier than the one before it; the trace must be in time order");
    }
    row.seconds = std::max(row.seconds, previous);
    previous = row.seconds;
    cut.last_seconds_read = row.seconds;
    ++cut.rows_read;
    if (row.seconds < options.start_seconds) continue;
    if (row.seconds >= end || (options.max_requests && cut.rows.size() >= *options.max_requests)) {
      cut.next_seconds = std::min(row.seconds, end);
      break;
    }
    if (cut.rows.size() >= kMaxRequests) {
      FailAt(name, line, "more than 10,000,000 requests; cut the trace shorter");
    }
    blocks += format == TraceFormat::kAzureCsv
                  ? static_cast<std::size_t>(row.prompt_tokens / block_tokens)
                  : row.ids.size();
    if (blocks > options.max_total_blocks) {
      FailAt(name, line,
             "the requests so far hold more than " + std::to_string(options.max_total_blocks) +
                 " prefix blocks; cut the trace shorter or use larger blocks");
    }
    cut.rows.push_back(std::move(row));
  }
  return cut;
}

// The cut's requests re-based, time-scaled and copied or thinned (the header's TraceOptions).
std::vector<TraceRequest> Scale(Cut& cut, TraceFormat format, const TraceOptions& options,
                                const std::string& name) {
  const std::vector<Row>& rows = cut.rows;
  const double origin = rows.front().seconds;
  const double scale = options.time_scale;
  if (!std::isfinite((rows.back().seconds - origin) * scale)) {
    Fail(name, "option time_scale " + Number(scale) + " makes the arrival times overflow");
  }
  const double mean_gap = rows.size() > 1 ? (rows.back().seconds - origin) * scale /
                                                static_cast<double>(rows.size() - 1)
                                          : 0;
  const double whole = std::floor(options.rate_scale);
  const double fraction = options.rate_scale - whole;
  if (whole * static_cast<double>(rows.size()) > static_cast<double>(kMaxRequests)) {
    Fail(name, "option rate_scale " + Number(options.rate_scale) +
                   " makes more than 10,000,000 requests");
  }
  Rng rng(options.seed, Stream::kRate);
  std::vector<TraceRequest> requests;
  std::size_t blocks = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Row& row = cut.rows[i];
    const double arrival = (row.seconds - origin) * scale;
    double next = arrival + mean_gap;
    if (i + 1 < rows.size()) {
      next = (rows[i + 1].seconds - origin) * scale;
    } else if (cut.next_seconds) {
      next = (*cut.next_seconds - origin) * scale;
    }
    const auto copies =
        static_cast<std::size_t>(whole) + (rng.Chance(fraction) ? std::size_t{1} : 0);
    for (std::size_t c = 0; c < copies; ++c) {
      if (requests.size() >= kMaxRequests) {
        Fail(name, "option rate_scale " + Number(options.rate_scale) +
                       " makes more than 10,000,000 requests");
      }
      TraceRequest& request = requests.emplace_back();
      request.arrival_seconds = c == 0 ? arrival : arrival + rng.Uniform() * (next - arrival);
      request.prompt_tokens = row.prompt_tokens;
      request.output_tokens = row.output_tokens;
      if (format == TraceFormat::kMooncakeJsonl) {
        std::uint64_t hash = c == 0 ? kChainBasis : Mix64(kChainBasis + c);
        request.prefix_blocks.reserve(row.ids.size());
        for (const std::uint64_t id : row.ids) {
          hash = ChainNext(hash, id);
          request.prefix_blocks.push_back(hash);
        }
        blocks += row.ids.size();
      } else {
        blocks += static_cast<std::size_t>(row.prompt_tokens / options.block_size_tokens);
      }
      if (blocks > options.max_total_blocks) {
        Fail(name, "option rate_scale " + Number(options.rate_scale) + " makes more than " +
                       std::to_string(options.max_total_blocks) + " prefix blocks");
      }
    }
    std::vector<std::uint64_t>().swap(row.ids);  // done with them: free as we go
  }
  if (requests.empty()) {
    Fail(name, "option rate_scale " + Number(options.rate_scale) + " left none of the " +
                   std::to_string(rows.size()) + " requests of the cut");
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const TraceRequest& a, const TraceRequest& b) {
                     return a.arrival_seconds < b.arrival_seconds;
                   });
  return requests;
}

// The synthetic session model (SessionModel in the header), fed the requests in arrival order.
class Sessions {
 public:
  Sessions(const SessionModel& model, std::uint64_t seed)
      : model_(model),
        continue_chance_(model.share * (model.mean_turns - 1) / model.mean_turns),
        extra_turns_chance_(1 / (model.mean_turns - 1)),
        rng_(seed, Stream::kSessions) {}

  struct Turn {
    std::uint64_t session = 0;
    std::optional<std::size_t> previous;  // the index of the session's previous turn
  };
  // The session of the request at `index`.
  Turn Next(std::size_t index) {
    if (model_.share <= 0) return {};
    const double u = rng_.Uniform();
    if (u < continue_chance_ && !slots_.empty()) {
      const std::uint64_t id = slots_[rng_.Below(slots_.size())];
      Open& open = open_.at(id);
      Turn turn{id, open.last_request};
      open.last_request = index;
      if (--open.turns_left == 0) Close(id);
      return turn;
    }
    if (u >= model_.share) return {};
    // A new session (also when a next turn found none open): 2 turns plus a geometric count
    // with mean mean_turns - 2, the first of them this one.
    const std::uint64_t id = ++last_id_;
    const std::uint64_t turns = 2 + rng_.Failures(extra_turns_chance_);
    open_.emplace(id, Open{turns - 1, index, slots_.size()});
    slots_.push_back(id);
    if (open_.size() > model_.max_open) Close(open_.begin()->first);
    return {id, std::nullopt};
  }

 private:
  struct Open {
    std::uint64_t turns_left = 0;
    std::size_t last_request = 0;
    std::size_t slot = 0;  // its place in slots_
  };

  void Close(std::uint64_t id) {
    const auto it = open_.find(id);
    const std::uint64_t moved = slots_.back();
    slots_[it->second.slot] = moved;
    open_.at(moved).slot = it->second.slot;
    slots_.pop_back();
    open_.erase(it);
  }

  SessionModel model_;
  double continue_chance_;
  double extra_turns_chance_;  // the success chance of the geometric count of turns past two
  Rng rng_;
  std::map<std::uint64_t, Open> open_;  // by id, so the first is the oldest
  std::vector<std::uint64_t> slots_;    // the ids in open_, for a uniform pick
  std::uint64_t last_id_ = 0;
};

// The synthetic prefix blocks of Azure requests (PrefixModel in the header).
class Prefixes {
 public:
  Prefixes(const PrefixModel& model, std::int32_t block_tokens, std::uint64_t seed)
      : share_(model.shared_share),
        rng_(seed, Stream::kPrefixes),
        unique_salt_(Mix64(seed ^ Mix64(static_cast<std::uint64_t>(Stream::kUniqueBlocks)))) {
    double total = 0;
    for (std::size_t k = 0; k < model.shared_prefixes; ++k) {
      total += std::pow(static_cast<double>(k + 1), -model.zipf_s);
      cumulative_.push_back(total);
      const auto span = static_cast<std::uint64_t>(model.max_tokens - model.min_tokens) + 1;
      const auto tokens = static_cast<std::uint64_t>(model.min_tokens) + rng_.Below(span);
      blocks_.push_back(static_cast<std::size_t>(tokens) / static_cast<std::size_t>(block_tokens));
      salts_.push_back(rng_.Next());
    }
  }

  // The `count` blocks of a request that continues a session whose previous turn had `history`
  // (nullptr: it continues none).
  std::vector<std::uint64_t> Blocks(std::size_t count, const std::vector<std::uint64_t>* history) {
    std::vector<std::uint64_t> blocks;
    blocks.reserve(count);
    if (history != nullptr) {
      blocks.assign(history->begin(), history->begin() + static_cast<std::ptrdiff_t>(
                                                             std::min(count, history->size())));
    } else if (rng_.Chance(share_)) {
      const double u = rng_.Uniform() * cumulative_.back();
      const auto k = std::min<std::size_t>(
          static_cast<std::size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                                   cumulative_.begin()),
          cumulative_.size() - 1);
      std::uint64_t hash = kChainBasis;
      for (std::size_t j = 0; j < std::min(count, blocks_[k]); ++j) {
        hash = ChainNext(hash, salts_[k] + j);
        blocks.push_back(hash);
      }
    }
    std::uint64_t hash = blocks.empty() ? kChainBasis : blocks.back();
    while (blocks.size() < count) {
      hash = ChainNext(hash, unique_salt_ ^ Mix64(next_unique_++));
      blocks.push_back(hash);
    }
    return blocks;
  }

 private:
  double share_;
  Rng rng_;
  std::uint64_t unique_salt_;
  std::uint64_t next_unique_ = 0;
  std::vector<double> cumulative_;    // Zipf weights of the prefixes, summed up to each
  std::vector<std::size_t> blocks_;   // each prefix's length in blocks
  std::vector<std::uint64_t> salts_;  // each prefix's block j has the id salt + j
};

}  // namespace

Trace ReadTrace(std::istream& in, const std::string& name, const TraceOptions& options) {
  CheckOptions(options, name);
  LineReader lines(in, name);
  const std::optional<std::string_view> first = lines.NextNonBlank();
  if (!first) Fail(name, "empty: no header and no requests");
  Trace trace;
  std::optional<std::string_view> first_row;
  if (TrimWhitespace(*first).starts_with('{')) {
    trace.format = TraceFormat::kMooncakeJsonl;
    trace.block_size_tokens = kMooncakeBlockTokens;
    first_row = first;
  } else if (*first == kAzureHeader) {
    trace.format = TraceFormat::kAzureCsv;
    trace.block_size_tokens = options.block_size_tokens;
  } else {
    FailAt(name, lines.line(),
           "not a trace: the first line is neither the Azure header " + std::string(kAzureHeader) +
               " nor a JSON object (Mooncake)");
  }

  Cut cut = ReadCut(lines, trace.format, first_row, options, name);
  if (cut.rows.empty()) {
    if (cut.rows_read == 0) {
      Fail(name, "no requests");
    }
    std::string window = "from " + Number(options.start_seconds) + " s";
    if (options.duration_seconds) window += " for " + Number(*options.duration_seconds) + " s";
    if (options.max_requests) window += ", at most " + std::to_string(*options.max_requests);
    Fail(name, "the cut (" + window + ") keeps no requests; the last request read is at " +
                   Number(cut.last_seconds_read) + " s of the trace");
  }
  trace.requests = Scale(cut, trace.format, options, name);

  Sessions sessions(options.sessions, options.seed);
  std::optional<Prefixes> prefixes;
  if (trace.format == TraceFormat::kAzureCsv) {
    prefixes.emplace(options.prefixes, options.block_size_tokens, options.seed);
  }
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const Sessions::Turn turn = sessions.Next(i);
    TraceRequest& request = trace.requests[i];
    request.session = turn.session;
    if (prefixes) {
      const std::vector<std::uint64_t>* history =
          turn.previous ? &trace.requests[*turn.previous].prefix_blocks : nullptr;
      request.prefix_blocks = prefixes->Blocks(
          static_cast<std::size_t>(request.prompt_tokens / options.block_size_tokens), history);
    }
  }
  return trace;
}

Trace ReadTraceFile(const std::string& path, const TraceOptions& options) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) Fail(path, "is a directory, not a trace");
  std::ifstream file(path, std::ios::binary);
  if (!file) Fail(path, "cannot open the file");
  return ReadTrace(file, path, options);
}

}  // namespace eoc::sim
