// eoc-sim's plots: the runs' figures as gnuplot data files and one gnuplot script, rendered to
// PNG when gnuplot is installed (Debian's gnuplot-nox). Part of the eoc-sim program, not of the
// simulator library (it writes files and runs a program).
//
//   std::vector<std::string> made = WritePlots(reports, "out/");   // the PNGs it rendered
//
// The plots, each with every run in it:
//   replicas.png   the fleet's pods and the in-flight requests over time
//   ttft-cdf.png   the CDF of the time to first token
//   energy.png     joules and milligrams CO2e per output token, per policy
#pragma once

#include <string>
#include <vector>

#include "sim/report.h"

namespace eoc::sim {

// Writes the data and `plots.gp` into `dir` (created if missing) and runs gnuplot on it. Returns
// the PNG files made; throws std::runtime_error naming what failed (a file that cannot be written;
// gnuplot that is missing or fails, with the script left in `dir` to run by hand).
std::vector<std::string> WritePlots(const std::vector<RunReport>& reports, const std::string& dir);

}  // namespace eoc::sim
