#include "fake_worker.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "server/address.h"
#include "server/http.h"
#include "server/server.h"

namespace eoc::testing {
namespace {

// About four bytes of text per token, at least one.
std::int64_t ApproxTokens(std::size_t bytes) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / 4));
}

std::size_t TextBytes(const nlohmann::json& value) {
  if (value.is_string()) return value.get_ref<const std::string&>().size();
  std::size_t n = 0;
  if (value.is_array()) {
    for (const auto& item : value) n += TextBytes(item);
  } else if (value.is_object()) {
    if (const auto it = value.find("content"); it != value.end()) n += TextBytes(*it);
    if (const auto it = value.find("text"); it != value.end()) n += TextBytes(*it);
  }
  return n;
}

void Error(server::Response& response, int status, const std::string& message) {
  response.set_status(status);
  response.set_content_type("application/json");
  response.body() =
      nlohmann::json{{"error", {{"message", message}, {"type", "invalid_request_error"}}}}.dump();
}

// A whole number >= 0, the whole of `text`.
std::optional<std::int64_t> ParseCount(const std::string& text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) return std::nullopt;
  return n;
}

// A finite number in [low, high], the whole of `text`.
std::optional<double> ParseNumber(const std::string& text, double low, double high) {
  double x = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(x) || x < low ||
      x > high) {
    return std::nullopt;
  }
  return x;
}

void Problem(std::vector<std::string>* problems, const char* key, const std::string& value) {
  if (problems != nullptr) problems->push_back(std::string(key) + ": cannot use \"" + value + "\"");
}

}  // namespace

sim::PageFigures ApplyLoadAnnotations(sim::PageFigures load,
                                      const std::map<std::string, std::string>& annotations,
                                      std::vector<std::string>* problems) {
  const auto apply = [&](const char* key, auto parse, auto& field) {
    const auto it = annotations.find(key);
    if (it == annotations.end()) return;
    if (auto value = parse(it->second)) {
      field = *value;
    } else {
      Problem(problems, key, it->second);
    }
  };
  const auto fraction = [](const std::string& s) { return ParseNumber(s, 0, 1); };
  const auto watts = [](const std::string& s) {
    return ParseNumber(s, 0, std::numeric_limits<double>::max());
  };
  apply(kRunningAnnotation, ParseCount, load.running);
  apply(kWaitingAnnotation, ParseCount, load.waiting);
  apply(kKvCacheUsageAnnotation, fraction, load.kv_cache_usage);
  apply(kWattsAnnotation, watts, load.watts);
  if (const auto it = annotations.find(kPowerCurveAnnotation);
      it != annotations.end() && it->second == "0") {
    load.power_curve.reset();
  } else {
    apply(kPowerCurveAnnotation, ParsePowerCurve, load.power_curve);
  }
  return load;
}

std::optional<sim::PowerCurve> ParsePowerCurve(std::string_view text) {
  sim::PowerCurve curve;
  bool idle = false;
  bool joules = false;
  bool rates = false;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = item.substr(0, eq);
    const std::string value(item.substr(eq + 1));
    const auto number = [&](double& out) {
      const auto x = ParseNumber(value, 0, 1e9);
      if (x) out = *x;
      return x.has_value();
    };
    if (key == "idle") {
      idle = number(curve.idle_watts);
      if (!idle) return std::nullopt;
    } else if (key == "joules-per-token") {
      joules = number(curve.joules_per_token);
      if (!joules) return std::nullopt;
    } else if (key == "tokens-per-second") {
      const std::size_t dash = value.find('-');
      const auto low = ParseNumber(value.substr(0, dash), 0, 1e9);
      const auto high =
          dash == std::string::npos ? low : ParseNumber(value.substr(dash + 1), 0, 1e9);
      if (!low || !high || *low > *high) return std::nullopt;
      curve.low_tokens_per_second = *low;
      curve.high_tokens_per_second = *high;
      rates = true;
    } else if (key == "period-ms") {
      const auto ms = ParseCount(value);
      if (!ms || *ms == 0) return std::nullopt;
      curve.period = std::chrono::milliseconds(*ms);
    } else {
      return std::nullopt;
    }
  }
  if (!idle || !joules || !rates) return std::nullopt;
  return curve;
}

FakeWorkerOptions ApplyAnnotations(FakeWorkerOptions options,
                                   const std::map<std::string, std::string>& annotations,
                                   std::vector<std::string>* problems) {
  const auto find = [&](const char* key) -> const std::string* {
    const auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  };
  const auto problem = [&](const char* key, const std::string& value) {
    Problem(problems, key, value);
  };
  if (const auto* engine = find(kEngineAnnotation)) {
    if (auto e = sim::ParseEngine(*engine)) {
      options.engine = *e;
    } else {
      problem(kEngineAnnotation, *engine);
    }
  }
  if (const auto* delay = find(kDelayAnnotation)) {
    if (auto ms = ParseCount(*delay)) {
      options.delay = std::chrono::milliseconds(*ms);
    } else {
      problem(kDelayAnnotation, *delay);
    }
  }
  if (const auto* model = find(kModelAnnotation)) {
    options.model = *model;
  } else if (const auto* models = find(kModelsAnnotation); models != nullptr && !models->empty()) {
    options.model = models->substr(0, models->find(','));
  }
  if (const auto* fault = find(kMetricsFaultAnnotation)) {
    if (auto f = ParseMetricsFault(*fault)) {
      options.metrics_fault = *f;
    } else {
      problem(kMetricsFaultAnnotation, *fault);
    }
  }
  if (const auto* exporter = find(kExporterAnnotation)) {
    if (auto e = sim::ParseExporter(*exporter)) {
      options.exporter = *e;
    } else {
      problem(kExporterAnnotation, *exporter);
    }
  }
  if (const auto* dcgm = find(kDcgmAnnotation)) {
    if (*dcgm == "true" || *dcgm == "false") {
      options.dcgm = *dcgm == "true";
    } else {
      problem(kDcgmAnnotation, *dcgm);
    }
  }
  options.load = ApplyLoadAnnotations(options.load, annotations, problems);
  return options;
}

FakeWorker::FakeWorker(FakeWorkerOptions options)
    : options_(std::move(options)),
      tag_(options_.pod_name.empty() ? options_.address
                                     : options_.pod_namespace + "/" + options_.pod_name),
      load_(options_.load),
      energy_(options_.load.watts),
      delay_(options_.delay),
      server_(std::make_unique<server::HttpServer>(
          server::ServerOptions{.address = options_.address, .threads = options_.threads})) {
  if (load_.power_curve) energy_.Follow(*load_.power_curve, sim::EnergyIntegrator::Clock::now());
  server_->Handle("GET", "/metrics", [this](const server::Request& req, server::Response& resp) {
    {
      const auto forwarded = req.header("x-forwarded-uri");
      const std::lock_guard lock(forwarded_mu_);
      last_forwarded_uri_ = forwarded ? std::string(*forwarded) : std::string();
    }
    metrics_requests_.fetch_add(1);
    resp.set_content_type(server::kPrometheusContentType);
    resp.body() = MetricsText();
    Tag(resp);
  });
  server_->Handle("GET", "/health",
                  [this](const server::Request&, server::Response& resp) { Tag(resp); });
  server_->Handle(
      "POST", "/v1/completions",
      [this](const server::Request& req, server::Response& resp) { Complete(req, resp, false); });
  server_->Handle(
      "POST", "/v1/chat/completions",
      [this](const server::Request& req, server::Response& resp) { Complete(req, resp, true); });
}

FakeWorker::~FakeWorker() { Stop(); }

std::string FakeWorker::last_metrics_forwarded_uri() const {
  const std::lock_guard lock(forwarded_mu_);
  return last_forwarded_uri_;
}

void FakeWorker::Start() {
  if (options_.metrics_fault == MetricsFault::kNone) return server_->Start();
  faulty_ = std::make_unique<FaultyMetricsServer>(options_.address, options_.metrics_fault);
  faulty_->Start();
}

void FakeWorker::Stop() {
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (faulty_) faulty_->Stop();
  server_->Stop();
}

std::uint16_t FakeWorker::port() const { return faulty_ ? faulty_->port() : server_->port(); }

std::string FakeWorker::endpoint() const {
  return server::ParseHostPort(options_.address).host + ":" + std::to_string(port());
}

void FakeWorker::SetLoad(const sim::PageFigures& load) {
  const std::lock_guard lock(mu_);
  load_ = load;
  const auto now = sim::EnergyIntegrator::Clock::now();
  if (load.power_curve) {
    energy_.Follow(*load.power_curve, now);
  } else {
    energy_.Set(load.watts, now);
  }
}

double FakeWorker::energy_joules() const {
  const std::lock_guard lock(mu_);
  return energy_.Joules(sim::EnergyIntegrator::Clock::now());
}

sim::PageFigures FakeWorker::load() const {
  const std::lock_guard lock(mu_);
  return load_;
}

sim::PageFigures FakeWorker::reported_load() const {
  const std::lock_guard lock(mu_);
  sim::PageFigures load = load_;
  if (load.power_curve) {
    const auto now = sim::EnergyIntegrator::Clock::now();
    load.watts = energy_.Watts(now);
    load.energy_millijoules_total = std::llround(energy_.Joules(now) * 1000);
    load.generation_tokens_total += std::llround(energy_.Tokens(now));
  }
  return load;
}

void FakeWorker::SetDelay(std::chrono::milliseconds delay) {
  const std::lock_guard lock(mu_);
  delay_ = delay;
}

std::chrono::milliseconds FakeWorker::delay() const {
  const std::lock_guard lock(mu_);
  return delay_;
}

std::string FakeWorker::MetricsText() const {
  if (options_.exporter) {
    return sim::RenderExporterMetrics(
        *options_.exporter, options_.node_name,
        options_.exporter_pods ? options_.exporter_pods() : std::vector<sim::ExporterPod>());
  }
  sim::PageFigures load = reported_load();
  if (options_.count_in_flight) load.running += in_flight_.load();
  const sim::MetricsLabels labels{.model = options_.model,
                                  .pod_name = options_.pod_name,
                                  .pod_namespace = options_.pod_namespace};
  return sim::RenderMetrics(options_.engine, load, labels, options_.dcgm, served_.load());
}

void FakeWorker::Tag(server::Response& response) const {
  response.AddHeader("x-eoc-fake-worker", tag_);
}

bool FakeWorker::Wait(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  if (d.count() > 0) wake_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

void FakeWorker::Complete(const server::Request& request, server::Response& response, bool chat) {
  Tag(response);
  const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
  if (!body.is_object()) return Error(response, 400, "the body is not a JSON object");
  const char* input_key = chat ? "messages" : "prompt";
  const auto input = body.find(input_key);
  if (input == body.end()) return Error(response, 400, std::string(input_key) + " is required");
  const std::int64_t prompt_tokens = ApproxTokens(TextBytes(*input));
  std::int64_t completion_tokens = 16;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (const auto it = body.find(key); it != body.end() && it->is_number_integer()) {
      completion_tokens = std::max<std::int64_t>(1, it->get<std::int64_t>());
    }
  }
  const auto model_it = body.find("model");
  const std::string model = model_it != body.end() && model_it->is_string()
                                ? model_it->get<std::string>()
                                : options_.model;

  ++in_flight_;
  const bool answered = Wait(delay());
  --in_flight_;
  if (!answered) return Error(response, 503, "the worker is stopping");

  const std::uint64_t n = ++served_;
  {
    const std::lock_guard lock(mu_);
    load_.prompt_tokens_total += prompt_tokens;
    load_.generation_tokens_total += completion_tokens;
  }
  const std::string text = "fake answer from " + tag_;
  nlohmann::json choice = {{"index", 0}, {"finish_reason", "length"}};
  if (chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  response.set_content_type("application/json");
  response.body() = nlohmann::json{{"id", (chat ? "chatcmpl-" : "cmpl-") + std::to_string(n)},
                                   {"object", chat ? "chat.completion" : "text_completion"},
                                   {"created", created},
                                   {"model", model},
                                   {"choices", nlohmann::json::array({choice})},
                                   {"usage",
                                    {{"prompt_tokens", prompt_tokens},
                                     {"completion_tokens", completion_tokens},
                                     {"total_tokens", prompt_tokens + completion_tokens}}}}
                        .dump();
}

}  // namespace eoc::testing
