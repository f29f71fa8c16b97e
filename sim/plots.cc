#include "sim/plots.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace eoc::sim {
namespace {

void Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A file name for a policy: letters, digits, '-' and '_' kept, anything else '_'.
std::string Slug(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_';
    out.push_back(keep ? c : '_');
  }
  return out.empty() ? "run" : out;
}

// A title for gnuplot's double-quoted strings.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

std::vector<std::string> WritePlots(const std::vector<RunReport>& reports, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  const fs::path base(dir);
  std::ostringstream energy;
  energy << "# policy joules_per_token milligrams_per_token\n";
  std::string replicas_plot;
  std::string ttft_plot;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunReport& r = reports[i];
    const std::string slug = std::to_string(i) + "-" + Slug(r.policy);
    std::ostringstream series;
    series << "# seconds replicas ready target in_flight waiting watts\n";
    for (const Sample& s : r.samples) {
      series << s.seconds << ' ' << s.replicas << ' ' << s.ready << ' ' << s.target << ' '
             << s.in_flight << ' ' << s.waiting << ' ' << s.watts << '\n';
    }
    Write(base / (slug + ".series.dat"), series.str());
    std::vector<double> ttft = r.ttft_samples;
    std::sort(ttft.begin(), ttft.end());
    std::ostringstream cdf;
    cdf << "# ttft_seconds fraction\n";
    for (std::size_t k = 0; k < ttft.size(); ++k) {
      cdf << ttft[k] << ' ' << static_cast<double>(k + 1) / static_cast<double>(ttft.size())
          << '\n';
    }
    Write(base / (slug + ".ttft.dat"), cdf.str());
    energy << Quoted(r.policy) << ' ' << r.joules_per_token << ' ' << 1000 * r.grams_per_token
           << '\n';
    const std::string sep = i == 0 ? "" : ", \\\n     ";
    const std::string series_file = Quoted(slug + ".series.dat");
    replicas_plot.append(sep).append(series_file).append(" using 1:2 with steps title ");
    replicas_plot.append(Quoted(r.policy + " pods")).append(", ").append(series_file);
    replicas_plot.append(" using 1:5 axes x1y2 with lines dashtype 2 title ");
    replicas_plot.append(Quoted(r.policy + " in flight"));
    ttft_plot.append(sep).append(Quoted(slug + ".ttft.dat"));
    ttft_plot.append(" using 1:2 with lines title ").append(Quoted(r.policy));
  }
  Write(base / "energy.dat", energy.str());
  const std::string script =
      "# Made by eoc-sim --plots; run with: gnuplot plots.gp (in this folder)\n"
      "set terminal pngcairo size 1000,560 font \"sans,10\"\n"
      "set grid\nset key outside right\n"
      "set output \"replicas.png\"\n"
      "set title \"Pods and requests in flight\"\n"
      "set xlabel \"simulated seconds\"\nset ylabel \"pods\"\nset y2label \"requests in "
      "flight\"\nset ytics nomirror\nset y2tics\n"
      "plot " +
      replicas_plot +
      "\n"
      "unset y2tics\nunset y2label\nset ytics mirror\n"
      "set output \"ttft-cdf.png\"\n"
      "set title \"Time to first token\"\nset logscale x\n"
      "set xlabel \"seconds\"\nset ylabel \"fraction of finished requests\"\n"
      "plot " +
      ttft_plot +
      "\n"
      "unset logscale x\n"
      "set output \"energy.png\"\n"
      "set title \"Energy and carbon per output token\"\n"
      "set style data histograms\nset style fill solid 0.8\nset boxwidth 0.8\n"
      "set xlabel \"\"\nset ylabel \"J/token\"\nset y2label \"mg CO2e/token\"\nset y2tics\n"
      "set yrange [0:*]\nset y2range [0:*]\n"
      "plot \"energy.dat\" using 2:xtic(1) title \"J/token\", \"\" using 3 axes x1y2 title "
      "\"mg CO2e/token\"\n";
  Write(base / "plots.gp", script);
  const std::string command = "cd " + Quoted(dir) + " && gnuplot plots.gp 2>gnuplot.log";
  // NOLINTNEXTLINE(concurrency-mt-unsafe,cert-env33-c): one call on the program's only thread
  const int status = std::system(command.c_str());
  if (status != 0) {
    throw std::runtime_error("gnuplot failed (is Debian's gnuplot-nox installed?); see " +
                             (base / "gnuplot.log").string() + ", and run plots.gp in " + dir +
                             " by hand");
  }
  return {(base / "replicas.png").string(), (base / "ttft-cdf.png").string(),
          (base / "energy.png").string()};
}

}  // namespace eoc::sim
