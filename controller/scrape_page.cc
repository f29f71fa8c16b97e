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

// The reading of `pod` ("namespace/name") on the page by the first of `maps` that has one.
std::optional<signals::PodEnergy> EnergyOf(const signals::Page& page,
                                           const std::vector<signals::EnergyMap>& maps,
                                           std::string_view pod) {
  const auto slash = pod.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view ns = pod.substr(0, slash);
  const std::string_view name = pod.substr(slash + 1);
  for (const signals::EnergyMap& map : maps) {
    signals::EnergyReading reading = map.Read(page);
    for (signals::PodEnergy& e : reading.pods) {
      if (e.pod_namespace == ns && e.pod == name && (e.watts || e.joules_total)) {
        return std::move(e);
      }
    }
  }
  return std::nullopt;
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
  if (!fetched.ok()) {
    reading.result = ResultOf(fetched.error->kind);
    reading.message = fetched.error->message;
    return reading;
  }
  const signals::ParseResult parsed = signals::ParseExposition(fetched.body, {.keep = maps.keep});
  if (!parsed.ok()) {
    reading.result = ScrapeResult::kParseError;
    reading.message = parsed.error().ToString();
    return reading;
  }
  bool running = false;
  WorkerFigures& f = reading.figures;
  for (const signals::ModelFigures& m : map.Read(parsed.page())) {
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
  if (!maps.energy.empty()) reading.energy = EnergyOf(parsed.page(), maps.energy, pod);
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

}  // namespace eoc::controller
