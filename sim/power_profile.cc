#include "sim/power_profile.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <istream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include "common/text.h"

namespace eoc::sim {
namespace {

// Bounds on what is read: the real mlenergy.csv is 0.6 MB with lines under 1 kB, so these only
// stop a wrong path (a disk image, /dev/zero) from eating the memory.
constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

// The one-sequence step is at least this fraction of the first measured step (see the header).
constexpr double kMinFloorFraction = 0.4;

// Listings in "no such key" errors stop after this many entries.
constexpr std::size_t kMaxListed = 40;

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

bool PositiveFinite(double value) { return std::isfinite(value) && value > 0; }

double Lerp(double x0, double y0, double x1, double y1, double x) {
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

// The index i of the segment from points[i] to points[i + 1] that holds `batch`, for a batch
// strictly between the first and the last point's.
std::size_t Segment(const std::vector<ProfilePoint>& points, double batch) {
  const auto above =
      std::upper_bound(points.begin(), points.end(), batch,
                       [](double b, const ProfilePoint& point) { return b < point.batch; });
  return static_cast<std::size_t>(above - points.begin()) - 1;
}

// The whole of `in`, refusing more than kMaxFileBytes.
std::string ReadLimited(std::istream& in, const std::string& name) {
  std::string text;
  std::array<char, 1 << 16> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    const auto got = static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0));
    if (got == 0) break;
    if (text.size() + got > kMaxFileBytes) throw ProfileError(name + ": larger than 64 MiB");
    text.append(chunk.data(), got);
  }
  if (in.bad()) throw ProfileError(name + ": read failed");
  return text;
}

std::string ReadFile(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw ProfileError(path + ": " + error.message());
  if (size > kMaxFileBytes) throw ProfileError(path + ": larger than 64 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProfileError(path + ": cannot be opened");
  return ReadLimited(in, path);
}

struct CsvRow {
  std::size_t line = 0;  // where the record starts, from 1
  std::vector<std::string> fields;
};

// The records of a CSV text, blank lines skipped. A record whose quoted field holds a line break
// runs over several lines; CRLF line ends and a leading UTF-8 byte order mark are accepted.
class CsvReader {
 public:
  CsvReader(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}

  // "NAME line N", for errors.
  std::string At(std::size_t line) const { return name_ + " line " + std::to_string(line); }
  const std::string& name() const { return name_; }

  // The next record into *row; false at the end. Throws ProfileError.
  bool Next(CsvRow* row) {
    std::string record;
    std::size_t start = 0;
    std::size_t quotes = 0;  // odd while a quoted field is open
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = std::min(end + 1, text_.size());
      ++line_;
      if (line.size() > kMaxLineBytes) throw ProfileError(At(line_) + ": longer than 1 MiB");
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (line_ == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
      if (start == 0) {
        if (TrimWhitespace(line).empty()) continue;
        start = line_;
      } else {
        record += '\n';
      }
      record += line;
      if (record.size() > kMaxLineBytes) {
        throw ProfileError(At(start) + ": a record longer than 1 MiB (a quote never closed?)");
      }
      quotes += static_cast<std::size_t>(std::count(line.begin(), line.end(), '"'));
      if (quotes % 2 != 0) continue;
      std::optional<std::vector<std::string>> fields = SplitCsvRecord(record);
      if (!fields) {
        throw ProfileError(At(start) +
                           ": malformed quotes (a quote inside an unquoted field, or text after "
                           "a closing quote)");
      }
      row->line = start;
      row->fields = std::move(*fields);
      return true;
    }
    if (start != 0) throw ProfileError(At(start) + ": a quoted field is never closed");
    return false;
  }

 private:
  std::string_view text_;
  std::string name_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;  // physical lines read
};

// A CSV file's header: the index of each column a reader needs, in the order it asked for them.
class Columns {
 public:
  // Reads the header record of `reader`; throws ProfileError naming every missing column.
  template <std::size_t N>
  Columns(CsvReader* reader, const std::array<std::string_view, N>& needed) {
    CsvRow header;
    if (!reader->Next(&header)) throw ProfileError(reader->name() + ": empty, no header line");
    width_ = header.fields.size();
    std::vector<std::string> missing;
    for (const std::string_view name : needed) {
      const auto found =
          std::find_if(header.fields.begin(), header.fields.end(),
                       [name](const std::string& field) { return TrimWhitespace(field) == name; });
      if (found == header.fields.end()) {
        missing.emplace_back(name);
      } else {
        index_.push_back(static_cast<std::size_t>(found - header.fields.begin()));
      }
    }
    if (!missing.empty()) {
      throw ProfileError(reader->At(header.line) + ": the header lacks the column" +
                         (missing.size() > 1 ? "s " : " ") + Join(missing, ", "));
    }
  }

  // Throws unless `row` has as many fields as the header.
  void CheckWidth(const CsvRow& row, const CsvReader& reader) const {
    if (row.fields.size() != width_) {
      throw ProfileError(reader.At(row.line) + ": " + std::to_string(row.fields.size()) +
                         " fields, the header has " + std::to_string(width_));
    }
  }

  // The trimmed text of the `which`-th needed column of `row` (a row CheckWidth passed).
  std::string_view Text(const CsvRow& row, std::size_t which) const {
    return TrimWhitespace(row.fields[index_[which]]);
  }

 private:
  std::vector<std::size_t> index_;
  std::size_t width_ = 0;
};

// `text` as a finite number; nullopt otherwise, blank included.
std::optional<double> ParseNumber(std::string_view text) {
  double value = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

// A measured value: present, a number and > 0.
double MeasuredValue(std::string_view text, std::string_view column, const std::string& at) {
  if (text.empty()) throw ProfileError(at + ": " + std::string(column) + " is blank");
  const std::optional<double> value = ParseNumber(text);
  if (!value) {
    throw ProfileError(at + ": " + std::string(column) + " is not a number: " + Quoted(text));
  }
  if (*value <= 0) {
    throw ProfileError(at + ": " + std::string(column) + " must be > 0, is " + Quoted(text));
  }
  return *value;
}

std::int32_t GpuCount(std::string_view text, const std::string& at) {
  std::int32_t count = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, count);
  if (error != std::errc() || stop != end || text.empty() || count < 1) {
    throw ProfileError(at + ": num_gpus is not a whole number >= 1: " + Quoted(text));
  }
  return count;
}

// Up to kMaxListed of `items`, then how many more.
std::string Listing(const std::vector<std::string>& items) {
  std::vector<std::string> shown(
      items.begin(),
      items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), kMaxListed)));
  std::string text = Join(shown, "; ");
  if (items.size() > kMaxListed) {
    text += "; and " + std::to_string(items.size() - kMaxListed) + " more";
  }
  return text;
}

std::string Describe(const ProfileKey& key) {
  return key.version + " " + Quoted(key.task) + " " + Quoted(key.model) + " on " +
         std::to_string(key.num_gpus) + " x " + key.gpu;
}

// The needed columns of mlenergy.csv, in this order.
constexpr std::array<std::string_view, 8> kMlColumns = {"leaderboard_version",
                                                        "task",
                                                        "model",
                                                        "gpu",
                                                        "num_gpus",
                                                        "avg_batch_size",
                                                        "derived_avg_power_per_gpu_w",
                                                        "throughput_tokens_per_s"};
constexpr std::size_t kVersion = 0;
constexpr std::size_t kTask = 1;
constexpr std::size_t kModel = 2;
constexpr std::size_t kGpu = 3;
constexpr std::size_t kNumGpus = 4;
constexpr std::size_t kBatch = 5;
constexpr std::size_t kPowerPerGpu = 6;
constexpr std::size_t kThroughput = 7;

std::vector<ProfilePoint> ReadPoints(std::string_view text, const std::string& name,
                                     const ProfileKey& key) {
  CsvReader reader(text, name);
  const Columns columns(&reader, kMlColumns);
  std::vector<ProfilePoint> points;
  // For the error when nothing matches: the keys of key.model's rows (version, task, gpu,
  // num_gpus -> rows), else the models of key.version on key.gpu, else the GPUs of key.version,
  // else the versions.
  std::map<std::tuple<std::string, std::string, std::string, std::int32_t>, int> model_keys;
  std::set<std::string> models_on_gpu;
  std::set<std::string> gpus_of_version;
  std::set<std::string> versions;
  CsvRow row;
  while (reader.Next(&row)) {
    columns.CheckWidth(row, reader);
    const std::string_view version = columns.Text(row, kVersion);
    const std::string_view gpu = columns.Text(row, kGpu);
    const std::string_view model = columns.Text(row, kModel);
    versions.emplace(version);
    if (version == key.version) {
      gpus_of_version.emplace(gpu);
      if (gpu == key.gpu) models_on_gpu.emplace(model);
    }
    if (model != key.model) continue;
    const std::string at = reader.At(row.line);
    const std::int32_t num_gpus = GpuCount(columns.Text(row, kNumGpus), at);
    const std::string_view task = columns.Text(row, kTask);
    ++model_keys[{std::string(version), std::string(task), std::string(gpu), num_gpus}];
    if (version != key.version || task != key.task || gpu != key.gpu || num_gpus != key.num_gpus) {
      continue;
    }
    const double batch = MeasuredValue(columns.Text(row, kBatch), kMlColumns[kBatch], at);
    const double per_gpu =
        MeasuredValue(columns.Text(row, kPowerPerGpu), kMlColumns[kPowerPerGpu], at);
    const double throughput =
        MeasuredValue(columns.Text(row, kThroughput), kMlColumns[kThroughput], at);
    points.push_back(
        {.batch = batch, .watts = per_gpu * num_gpus, .tokens_per_second = throughput});
  }
  if (!points.empty()) return points;

  const std::string error = name + ": no rows for " + Describe(key);
  if (!model_keys.empty()) {
    std::vector<std::string> keys;
    for (const auto& [k, rows] : model_keys) {
      const auto& [version, task, gpu, num_gpus] = k;
      std::string listed = version;
      listed += " " + Quoted(task);
      listed += " on " + std::to_string(num_gpus) + " x " + gpu;
      listed += " (" + std::to_string(rows) + (rows == 1 ? " row)" : " rows)");
      keys.push_back(std::move(listed));
    }
    throw ProfileError(error + "; the model has rows for: " + Listing(keys));
  }
  if (!models_on_gpu.empty()) {
    throw ProfileError(error + "; no row names that model; models with " + key.version +
                       " rows on " + key.gpu + ": " +
                       Listing({models_on_gpu.begin(), models_on_gpu.end()}));
  }
  if (gpus_of_version.empty()) {
    throw ProfileError(error + "; no " + key.version + " rows at all; versions there: " +
                       Listing({versions.begin(), versions.end()}));
  }
  throw ProfileError(error + "; no " + key.version + " row is on " + key.gpu +
                     "; GPUs with rows of that version: " +
                     Listing({gpus_of_version.begin(), gpus_of_version.end()}));
}

constexpr std::array<std::string_view, 2> kGpuColumns = {"gpu", "idle_w"};
constexpr std::size_t kGpuName = 0;
constexpr std::size_t kIdle = 1;

// Idle watts of one GPU of `gpu`: the override, else gpus.csv's reading.
double ReadIdleWatts(std::string_view text, const std::string& name, const std::string& gpu,
                     std::optional<double> override_watts) {
  CsvReader reader(text, name);
  const Columns columns(&reader, kGpuColumns);
  std::optional<CsvRow> found;
  CsvRow row;
  while (reader.Next(&row)) {
    columns.CheckWidth(row, reader);
    if (columns.Text(row, kGpuName) != gpu) continue;
    if (found) {
      throw ProfileError(reader.At(row.line) + ": GPU " + gpu + " is listed again (first at line " +
                         std::to_string(found->line) + ")");
    }
    found = row;
  }
  if (override_watts) {
    if (!std::isfinite(*override_watts) || *override_watts < 0) {
      throw ProfileError("idle watts given for " + gpu + " must be finite and >= 0, is " +
                         Number(*override_watts));
    }
    return *override_watts;
  }
  if (!found) {
    throw ProfileError(name + ": no row for GPU " + Quoted(gpu) +
                       ", so its idle watts per GPU must be given");
  }
  const std::string at = reader.At(found->line);
  const std::string_view idle = columns.Text(*found, kIdle);
  if (idle.empty()) {
    throw ProfileError(at + ": GPU " + Quoted(gpu) +
                       " has no idle_w reading, so its idle watts per GPU must be given");
  }
  return MeasuredValue(idle, kGpuColumns[kIdle], at);
}

PowerProfile BuildProfile(std::string_view mlenergy, const std::string& mlenergy_name,
                          std::string_view gpus, const std::string& gpus_name,
                          const ProfileKey& key, std::optional<double> idle_watts) {
  if (key.num_gpus < 1) {
    throw ProfileError("num_gpus must be >= 1, is " + std::to_string(key.num_gpus));
  }
  std::vector<ProfilePoint> points = ReadPoints(mlenergy, mlenergy_name, key);
  const double idle_per_gpu = ReadIdleWatts(gpus, gpus_name, key.gpu, idle_watts);
  return {std::move(points), idle_per_gpu * key.num_gpus};
}

}  // namespace

PowerProfile::PowerProfile(std::vector<ProfilePoint> points, double idle_watts)
    : idle_watts_(idle_watts) {
  if (points.empty()) throw ProfileError("a power profile needs at least one measured point");
  if (!std::isfinite(idle_watts) || idle_watts < 0) {
    throw ProfileError("idle watts must be finite and >= 0, is " + Number(idle_watts));
  }
  for (const ProfilePoint& p : points) {
    if (!PositiveFinite(p.batch) || !PositiveFinite(p.watts) ||
        !PositiveFinite(p.tokens_per_second)) {
      throw ProfileError("a profile point needs batch, watts and tokens per second > 0, has " +
                         Number(p.batch) + ", " + Number(p.watts) + ", " +
                         Number(p.tokens_per_second));
    }
  }
  std::sort(points.begin(), points.end(),
            [](const ProfilePoint& a, const ProfilePoint& b) { return a.batch < b.batch; });
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    double watts = 0;
    double tokens_per_second = 0;
    for (; j < points.size() && points[j].batch == points[i].batch; ++j) {
      watts += points[j].watts;
      tokens_per_second += points[j].tokens_per_second;
    }
    const auto n = static_cast<double>(j - i);
    points_.push_back(
        {.batch = points[i].batch, .watts = watts / n, .tokens_per_second = tokens_per_second / n});
    i = j;
  }

  double slowest = 0;
  for (const ProfilePoint& p : points_) {
    slowest = std::max(slowest, p.batch / p.tokens_per_second);
    step_seconds_.push_back(slowest);
  }

  const double first_batch = points_.front().batch;
  const double first_step = step_seconds_.front();
  double fraction = 1;
  if (points_.size() > 1 && first_batch > 1) {
    const double slope = (step_seconds_[1] - first_step) / (points_[1].batch - first_batch);
    fraction =
        std::clamp((first_step - slope * (first_batch - 1)) / first_step, kMinFloorFraction, 1.0);
  }
  floor_step_seconds_ = first_step * fraction;

  const std::size_t last = points_.size() - 1;
  tail_slope_ = last > 0 ? (step_seconds_[last] - step_seconds_[last - 1]) /
                               (points_[last].batch - points_[last - 1].batch)
                         : first_step / first_batch;
}

double PowerProfile::Watts(double batch) const {
  if (!(batch > 0)) return idle_watts_;
  const ProfilePoint& first = points_.front();
  const ProfilePoint& last = points_.back();
  double watts = last.watts;
  if (batch <= first.batch) {
    watts = Lerp(0, idle_watts_, first.batch, first.watts, batch);
  } else if (batch < last.batch) {
    const std::size_t i = Segment(points_, batch);
    watts =
        Lerp(points_[i].batch, points_[i].watts, points_[i + 1].batch, points_[i + 1].watts, batch);
  }
  return std::max(watts, idle_watts_);
}

double PowerProfile::StepSeconds(double batch) const {
  const double first = points_.front().batch;
  const double last = points_.back().batch;
  if (!(batch > first)) {  // NaN included
    if (!(batch > 1)) return floor_step_seconds_;
    return Lerp(1, floor_step_seconds_, first, step_seconds_.front(), batch);
  }
  if (batch >= last) return step_seconds_.back() + tail_slope_ * (batch - last);
  const std::size_t i = Segment(points_, batch);
  return Lerp(points_[i].batch, step_seconds_[i], points_[i + 1].batch, step_seconds_[i + 1],
              batch);
}

double PowerProfile::TokensPerSecond(double batch) const {
  if (!(batch > 0)) return 0;
  return batch / StepSeconds(batch);
}

std::optional<std::vector<std::string>> SplitCsvRecord(std::string_view record) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (true) {
    std::string field;
    if (i < record.size() && record[i] == '"') {
      ++i;
      while (true) {
        if (i >= record.size()) return std::nullopt;  // never closed
        const char c = record[i++];
        if (c != '"') {
          field += c;
        } else if (i < record.size() && record[i] == '"') {
          field += '"';
          ++i;
        } else {
          break;
        }
      }
      if (i < record.size() && record[i] != ',') return std::nullopt;
    } else {
      for (; i < record.size() && record[i] != ','; ++i) {
        if (record[i] == '"') return std::nullopt;
        field += record[i];
      }
    }
    fields.push_back(std::move(field));
    if (i >= record.size()) return fields;
    ++i;  // the comma
  }
}

PowerProfile LoadPowerProfile(const std::string& mlenergy_csv, const std::string& gpus_csv,
                              const ProfileKey& key, std::optional<double> idle_watts) {
  const std::string mlenergy = ReadFile(mlenergy_csv);
  const std::string gpus = ReadFile(gpus_csv);
  return BuildProfile(mlenergy, mlenergy_csv, gpus, gpus_csv, key, idle_watts);
}

PowerProfile ReadPowerProfile(std::istream& mlenergy, std::istream& gpus, const ProfileKey& key,
                              std::optional<double> idle_watts, const std::string& names) {
  const std::string mlenergy_name = names + ": mlenergy";
  const std::string gpus_name = names + ": gpus";
  const std::string mlenergy_text = ReadLimited(mlenergy, mlenergy_name);
  const std::string gpus_text = ReadLimited(gpus, gpus_name);
  return BuildProfile(mlenergy_text, mlenergy_name, gpus_text, gpus_name, key, idle_watts);
}

}  // namespace eoc::sim
