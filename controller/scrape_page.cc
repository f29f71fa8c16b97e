#include "controller/scrape_page.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "signals/exposition.h"

namespace eoc::controller {

ScrapeResult ResultOf(FetchErrorKind kind) {
  switch (kind) {
    case FetchErrorKind::kDeadline:
      return ScrapeResult::kDeadline;
    case FetchErrorKind::kConnectRefused:
      return ScrapeResult::kConnectRefused;
    case FetchErrorKind::kTooLarge:
      return ScrapeResult::kTooLarge;
    case FetchErrorKind::kHttpStatus:
      return ScrapeResult::kHttpStatus;
    case FetchErrorKind::kMalformed:
      return ScrapeResult::kMalformed;
    case FetchErrorKind::kTransport:
      return ScrapeResult::kTransport;
    case FetchErrorKind::kCancelled:
      return ScrapeResult::kCancelled;
    case FetchErrorKind::kOverloaded:
      return ScrapeResult::kOverloaded;
  }
  return ScrapeResult::kTransport;
}

namespace {

void AddTo(std::optional<double>& sum, const std::optional<double>& value) {
  if (value) sum = sum.value_or(0) + *value;
}

// The fetched page parsed keeping `keep`; nullopt, with why in `result` and `message`, for a
// fetch error or a page that does not parse.
std::optional<signals::Page> ParseFetched(const FetchResult& fetched,
                                          const signals::FamilyFilter& keep, ScrapeResult& result,
                                          std::string& message) {
  if (!fetched.ok()) {
    result = ResultOf(fetched.error->kind);
    message = fetched.error->message;
    return std::nullopt;
  }
  signals::ParseResult parsed = signals::ParseExposition(fetched.body, {.keep = keep});
  if (!parsed.ok()) {
    result = ScrapeResult::kParseError;
    message = parsed.error().ToString();
    return std::nullopt;
  }
  return parsed.TakePage();
}

// Each pod's reading on the page ("namespace/name" -> it) by the first of `maps` that has one
// with a figure; `truncated` is set when a map dropped pods past its bound.
std::map<std::string, signals::PodEnergy> PodsOf(const signals::Page& page,
                                                 const std::vector<signals::EnergyMap>& maps,
                                                 bool* truncated) {
  std::map<std::string, signals::PodEnergy> pods;
  for (const signals::EnergyMap& map : maps) {
    signals::EnergyReading reading = map.Read(page);
    if (reading.truncated && truncated != nullptr) *truncated = true;
    for (signals::PodEnergy& e : reading.pods) {
      if (!e.watts && !e.joules_total) continue;
      std::string key = e.pod_namespace;
      key.append("/").append(e.pod);
      pods.try_emplace(std::move(key), std::move(e));
    }
  }
  return pods;
}

}  // namespace

PageMaps PageMapsOf(signals::EngineMap engine, api::EnergySource source) {
  PageMaps maps{.engine = std::move(engine), .energy = {}, .keep = {}};
  if (source == api::EnergySource::kAuto || source == api::EnergySource::kDcgm) {
    maps.energy.push_back(signals::EnergyMap::Dcgm());
  }
  if (source == api::EnergySource::kAuto || source == api::EnergySource::kKepler) {
    maps.energy.push_back(signals::EnergyMap::Kepler());
  }
  std::vector<std::string> families = maps.engine.families();
  for (const signals::EnergyMap& e : maps.energy) {
    families.insert(families.end(), e.families().begin(), e.families().end());
  }
  maps.keep = signals::KeepFamilies(std::move(families));
  return maps;
}

ScrapeReading ReadScrape(const FetchResult& fetched, const signals::EngineMap& map) {
  return ReadScrape(fetched, PageMapsOf(map, api::EnergySource::kStatic), "");
}

ScrapeReading ReadScrape(const FetchResult& fetched, const PageMaps& maps, std::string_view pod) {
  const signals::EngineMap& map = maps.engine;
  ScrapeReading reading;
  const std::optional<signals::Page> page =
      ParseFetched(fetched, maps.keep, reading.result, reading.message);
  if (!page) return reading;
  bool running = false;
  WorkerFigures& f = reading.figures;
  for (const signals::ModelFigures& m : map.Read(*page)) {
    if (m.running) {
      running = true;
      f.running += *m.running;
    }
    f.waiting += m.waiting.value_or(0);
    if (m.kv_cache_usage)
      f.kv_cache_usage = std::max(f.kv_cache_usage.value_or(0), *m.kv_cache_usage);
    f.block_size = std::max<std::int64_t>(f.block_size, m.block_size.value_or(0));
    f.gpu_blocks = std::max<std::int64_t>(f.gpu_blocks, m.num_gpu_blocks.value_or(0));
    AddTo(f.prompt_tokens_total, m.prompt_tokens_total);
    AddTo(f.generation_tokens_total, m.generation_tokens_total);
  }
  if (!running) {
    reading.result = ScrapeResult::kMissingSeries;
    reading.message = "the page has no running-requests series of the engine";
    return reading;
  }
  if (!maps.energy.empty()) {
    auto pods = PodsOf(*page, maps.energy, nullptr);
    const auto it = pods.find(std::string(pod));
    if (it != pods.end()) reading.energy = std::move(it->second);
  }
  return reading;
}

ExporterReading ReadExporterPage(const FetchResult& fetched, const PageMaps& maps) {
  ExporterReading reading;
  const std::optional<signals::Page> page =
      ParseFetched(fetched, maps.keep, reading.result, reading.message);
  if (!page) return reading;
  reading.pods = PodsOf(*page, maps.energy, &reading.truncated);
  if (reading.pods.empty()) {
    bool any = false;  // a page with the series but no pod attributed is fine: idle GPUs
    for (const signals::EnergyMap& map : maps.energy) {
      for (const std::string& family : map.families()) any = any || page->Find(family) != nullptr;
    }
    if (!any) {
      reading.result = ScrapeResult::kMissingSeries;
      reading.message = "the page has none of the energy exporters' series (DCGM, Kepler)";
    }
  }
  return reading;
}

routing::Load LoadOf(const WorkerFigures& figures,
                     const std::optional<signals::TokenRate::Rate>& rate) {
  routing::Load load{.running = figures.running,
                     .waiting = figures.waiting,
                     .kv_cache_usage = std::clamp(figures.kv_cache_usage.value_or(0), 0.0, 1.0),
                     .available = true};
  if (figures.block_size > 0 && figures.gpu_blocks > 0 && figures.kv_cache_usage) {
    load.kv_blocks_total = figures.gpu_blocks;
    load.kv_blocks_free = static_cast<std::int64_t>(
        std::floor(static_cast<double>(figures.gpu_blocks) * (1.0 - load.kv_cache_usage)));
    load.block_size = static_cast<std::int32_t>(
        std::min<std::int64_t>(figures.block_size, std::numeric_limits<std::int32_t>::max()));
  }
  if (rate) load.tokens_per_second = rate->tokens_per_second();
  return load;
}

routing::Load ObserveGoodScrape(const ScrapeReading& reading,
                                std::chrono::steady_clock::time_point at, double grid_g_per_kwh,
                                WorkerReadings& w) {
  const WorkerFigures& f = reading.figures;
  std::optional<signals::TokenRate::Rate> rate;
  if (f.prompt_tokens_total || f.generation_tokens_total) {
    rate = w.rate.Add(at, f.prompt_tokens_total.value_or(0), f.generation_tokens_total.value_or(0));
  }
  routing::Load load = LoadOf(f, rate);
  w.tokens_per_second = rate ? std::optional(rate->tokens_per_second()) : std::nullopt;
  const bool was_own = w.own_energy;
  w.own_energy = reading.energy.has_value();
  if (was_own != w.own_energy) w.energy.Miss();  // the other source's counter until now
  if (reading.energy) w.energy.Observe(at, *reading.energy, w.tokens_per_second);
  load.marginal_joules_per_token = w.energy.marginal().joules_per_token();
  load.grid_g_per_kwh = grid_g_per_kwh;
  return load;
}

}  // namespace eoc::controller
