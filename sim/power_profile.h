// Power draw and decode speed of one simulated inference instance (one accelerator class, one
// GPU count, one model, one workload) as functions of its batch, the sequences it runs at once.
// Built from the measured rows of the ML.ENERGY benchmark in shared/energy-profiles/mlenergy.csv,
// with the GPU's idle power from gpus.csv, so that the simulator's power is non-linear in load and
// an instance that sits idle still costs joules.
//
//   eoc::sim::ProfileKey key{.version = "v3.0", .task = "lm-arena-chat",
//                            .model = "meta-llama/Llama-3.1-8B-Instruct",
//                            .gpu = "H100-80GB-HBM3", .num_gpus = 1};
//   eoc::sim::PowerProfile p = eoc::sim::LoadPowerProfile(dir + "/mlenergy.csv",
//                                                         dir + "/gpus.csv", key, std::nullopt);
//   double step = p.StepSeconds(running);          // s per decode step of `running` sequences
//   joules += p.Watts(running) * step;             // W x s over that step
//
// Each measured row is a saturated engine at one average batch (ML.ENERGY keeps only runs whose
// average batch stayed near its max_num_seqs), so a profile is a handful of points from batch 8 or
// 16 upwards. Between and around them (b = batch, points sorted by batch, first b0, last bn):
//
// Watts(b)
//   b <= 0: idle. 0 < b < b0: linear from idle at 0 to the first point's watts, since the
//   benchmark measured nothing below b0 and an engine running one sequence draws more than an idle
//   GPU and less than one running b0. Between points: linear in b. b > bn: the last point's watts,
//   flat, because an engine cannot run more sequences than its max_num_seqs (the caller caps the
//   batch; this only keeps a stray value sane). Never below idle: the line from idle to b0 and
//   every point are clamped to at least idle, which matters only when an idle override exceeds a
//   measured point.
//
// StepSeconds(b): the seconds of one decode step, b / tokens_per_second at a measured point.
//   Step times are first made non-decreasing by a running maximum over the points in batch order:
//   13 of the 183 (version, task, model, gpu, num_gpus) groups in the file have a larger batch
//   finishing its step faster than a smaller one, which is noise between separate runs (or a
//   different prefill mix), not a property a simulator should reproduce; points() keeps the
//   measured data unchanged. Then:
//   Between points: linear in b. b > bn: the line through the last two points, extended (after
//   the running maximum it cannot slope down, so more sequences never cost less time); with one
//   point, proportional to b, i.e. no more throughput than measured. 1 < b < b0: linear from a
//   floor of s0 x r at b = 1 up to the first point's step time s0; b <= 1: the floor. r is where
//   the line through the first two points meets b = 1, as a fraction of s0, clamped to [0.4, 1];
//   with one point (or b0 <= 1) r = 1. Why: a decode step at a small batch is bound by reading the
//   weights from memory once per step, which no smaller batch avoids, so the step shrinks only by
//   the per-sequence part that the first two points' slope measures; the 0.4 bound keeps a steep
//   first segment from making one sequence nearly free (after the running maximum that segment
//   cannot fall, so r never exceeds 1: one sequence is never slower than b0).
//   For the real files r is 0.92 (H100 v3 Llama-3.1-8B), 0.83 (B200 v3) and 0.51 (A100 v2).
//
// TokensPerSecond(b) is b / StepSeconds(b), 0 for b <= 0; at a measured point whose step time the
// running maximum left alone, it is that row's throughput.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace eoc::sim {

// A profile that cannot be built; the message names the file, the line and the problem.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which rows of mlenergy.csv make a profile: the CSV's values, compared exactly.
struct ProfileKey {
  std::string version;  // leaderboard_version: "v2.0" or "v3.0" (a fleet never mixes them; the
                        // caller checks, since the two differ in engine, data and method)
  std::string task;     // e.g. "lm-arena-chat" (v3), "chat (ShareGPT)" (v2)
  std::string model;    // e.g. "meta-llama/Llama-3.1-8B-Instruct" (v2 spells it Meta-Llama-3.1-)
  std::string gpu;      // e.g. "H100-80GB-HBM3", "B200", "A100-SXM4-40GB"
  std::int32_t num_gpus = 1;  // GPUs serving one instance (tensor x pipeline parallel)
};

// One measured row, for the whole instance.
struct ProfilePoint {
  double batch = 0;              // avg_batch_size: sequences running, averaged over the window
  double watts = 0;              // derived_avg_power_per_gpu_w x num_gpus (GPU boards only)
  double tokens_per_second = 0;  // throughput_tokens_per_s: output tokens of the whole instance
};

class PowerProfile {
 public:
  // `points`: at least one, each with batch, watts and tokens per second finite and > 0; they are
  // sorted by batch here, and points of equal batch replaced by one with their mean watts and
  // throughput. `idle_watts`: the whole instance at rest, finite and >= 0. Throws ProfileError.
  PowerProfile(std::vector<ProfilePoint> points, double idle_watts);

  // The whole instance idle, W (the per-GPU idle x num_gpus when loaded from the files).
  double idle_watts() const { return idle_watts_; }
  // Instance power, W, while it runs `batch` sequences (see the rules above; NaN counts as 0).
  double Watts(double batch) const;
  // Seconds of one decode step of `batch` sequences; non-decreasing in batch, and the one-sequence
  // floor for batch <= 1 (batch 0 has no step, but a caller dividing by it gets a finite number).
  double StepSeconds(double batch) const;
  // Output tokens per second of the instance: batch / StepSeconds(batch); 0 for batch <= 0.
  double TokensPerSecond(double batch) const;
  // The measured points, sorted and de-duplicated, with their measured (not smoothed) throughput.
  const std::vector<ProfilePoint>& points() const { return points_; }
  // The largest measured batch.
  double max_batch() const { return points_.back().batch; }

 private:
  std::vector<ProfilePoint> points_;
  std::vector<double> step_seconds_;  // per point: b / tokens_per_second, running maximum
  double idle_watts_ = 0;
  double floor_step_seconds_ = 0;  // the step at batch <= 1
  double tail_slope_ = 0;          // s per sequence above max_batch(), >= 0
};

// Fields of one CSV record as RFC 4180 writes them: separated by commas; a field in double quotes
// may hold commas, line breaks and doubled quotes ("" for one "). nullopt when the quotes are
// malformed: a quote inside an unquoted field, anything but a comma after a closing quote, or a
// quoted field never closed. "" is one empty field.
std::optional<std::vector<std::string>> SplitCsvRecord(std::string_view record);

// Reads key's rows from `mlenergy_csv` (columns leaderboard_version, task, model, gpu, num_gpus,
// avg_batch_size, derived_avg_power_per_gpu_w, throughput_tokens_per_s) and the idle watts of
// key.gpu from `gpus_csv` (columns gpu, idle_w). `idle_watts` (W per GPU, as gpus.csv gives it)
// replaces the file's reading, and is required when gpus.csv has none for that GPU; either is
// multiplied by key.num_gpus. Only the rows of key.model are read beyond their text columns, so a
// malformed number in another model's row does not stop this one.
// Throws ProfileError naming the file, the line and the problem: a file over 64 MiB, a line over
// 1 MiB, a header missing columns (all named), a row of the wrong width, a field that is not a
// number (its column named), a blank or non-positive batch, power or throughput; and, when no row
// matches, the keys that exist for that model (or, for an unknown model, the models there are for
// that version and GPU).
PowerProfile LoadPowerProfile(const std::string& mlenergy_csv, const std::string& gpus_csv,
                              const ProfileKey& key, std::optional<double> idle_watts);

// The same from streams (for tests); errors name them "<names>: mlenergy line N" and
// "<names>: gpus line N".
PowerProfile ReadPowerProfile(std::istream& mlenergy, std::istream& gpus, const ProfileKey& key,
                              std::optional<double> idle_watts, const std::string& names);

}  // namespace eoc::sim
