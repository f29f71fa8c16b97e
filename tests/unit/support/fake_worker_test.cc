#include "fake_worker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "eventually.h"
#include "promtool.h"
#include "server/http.h"

namespace eoc::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace http = boost::beast::http;

struct Answer {
  int status = 0;
  std::string content_type;
  std::string worker;  // x-eoc-fake-worker
  std::string body;
};

// One request on a new connection; nullopt when the connection fails or closes first.
std::optional<Answer> Fetch(std::uint16_t port, http::verb verb, const std::string& target,
                            const std::string& body = "") {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(30));
  boost::system::error_code ec;
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return std::nullopt;
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, "test");
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(stream, request, ec);
  if (ec) return std::nullopt;
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response, ec);
  if (ec) return std::nullopt;
  return Answer{static_cast<int>(response.result_int()),
                std::string(response[http::field::content_type]),
                std::string(response["x-eoc-fake-worker"]), response.body()};
}

sim::PageFigures SomeLoad() {
  return {.running = 3,
          .waiting = 2,
          .kv_cache_usage = 0.25,
          .num_gpu_blocks = 1000,
          .block_size = 16,
          .max_running = 128,
          .prompt_tokens_total = 5000,
          .generation_tokens_total = 7000,
          .watts = 312.5,
          .energy_millijoules_total = 123456789};
}

const sim::MetricsLabels kLabels{.model = "llama", .pod_name = "web-0", .pod_namespace = "ns"};

TEST(RenderMetricsTest, VllmForm) {
  const std::string text = sim::RenderMetrics(api::Engine::kVllm, SomeLoad(), kLabels, false);
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:num_requests_running gauge\n"
                              "vllm:num_requests_running{model_name=\"llama\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("vllm:num_requests_waiting{model_name=\"llama\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("vllm:gpu_cache_usage_perc{model_name=\"llama\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("vllm:kv_cache_usage_perc{model_name=\"llama\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE vllm:prompt_tokens_total counter\n"
                              "vllm:prompt_tokens_total{model_name=\"llama\"} 5000\n"));
  EXPECT_THAT(text, HasSubstr("vllm:generation_tokens_total{model_name=\"llama\"} 7000\n"));
  EXPECT_THAT(text, HasSubstr("vllm:cache_config_info{block_size=\"16\","));
  EXPECT_THAT(text, HasSubstr("num_gpu_blocks=\"1000\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# HELP vllm:num_requests_waiting "));
  EXPECT_THAT(text, Not(HasSubstr("DCGM")));
}

TEST(RenderMetricsTest, SglangForm) {
  const std::string text = sim::RenderMetrics(api::Engine::kSglang, SomeLoad(), kLabels, false);
  EXPECT_THAT(text, HasSubstr("sglang:num_running_reqs{model_name=\"llama\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("sglang:num_queue_reqs{model_name=\"llama\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("sglang:token_usage{model_name=\"llama\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("sglang:num_used_tokens{model_name=\"llama\"} 4000\n"));
  EXPECT_THAT(text, HasSubstr("sglang:max_total_num_tokens{model_name=\"llama\"} 16000\n"));
  EXPECT_THAT(text, HasSubstr("sglang:page_size{model_name=\"llama\"} 16\n"));
  EXPECT_THAT(text, HasSubstr("sglang:num_pages{model_name=\"llama\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("sglang:prompt_tokens_total{model_name=\"llama\"} 5000\n"));
  EXPECT_THAT(text, HasSubstr("sglang:generation_tokens_total{model_name=\"llama\"} 7000\n"));
}

TEST(RenderMetricsTest, TensorRtLlmForm) {
  const std::string text = sim::RenderMetrics(api::Engine::kTrtllm, SomeLoad(), kLabels, false, 10);
  const auto request = [](const char* type) {
    return R"(nv_trt_llm_request_metrics{model="tensorrt_llm",request_type=")" + std::string(type) +
           R"(",version="1"} )";
  };
  EXPECT_THAT(text, HasSubstr(request("active") + "5\n"));
  EXPECT_THAT(text, HasSubstr(request("scheduled") + "3\n"));
  EXPECT_THAT(text, HasSubstr(request("waiting") + "2\n"));
  EXPECT_THAT(text, HasSubstr(request("max") + "128\n"));
  EXPECT_THAT(text, HasSubstr(request("context") + "0\n"));
  const auto block = [](const char* type) {
    return R"(nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=")" + std::string(type) +
           R"(",model="tensorrt_llm",version="1"} )";
  };
  EXPECT_THAT(text, HasSubstr(block("max") + "1000\n"));
  EXPECT_THAT(text, HasSubstr(block("used") + "250\n"));
  EXPECT_THAT(text, HasSubstr(block("free") + "750\n"));
  EXPECT_THAT(text, HasSubstr(block("tokens_per") + "16\n"));
  EXPECT_THAT(text, HasSubstr(block("fraction") + "0.25\n"));
  // Token totals as histogram sums; 10 requests of 500 prompt tokens on average.
  EXPECT_THAT(text, HasSubstr("# TYPE nv_llm_input_token_len histogram\n"));
  EXPECT_THAT(text, HasSubstr("nv_llm_input_token_len_sum{model=\"tensorrt_llm\",response_metric_"
                              "type=\"total_input_tokens\",version=\"1\"} 5000\n"));
  EXPECT_THAT(text, HasSubstr("nv_llm_input_token_len_count{model=\"tensorrt_llm\",response_"
                              "metric_type=\"total_input_tokens\",version=\"1\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("type=\"total_input_tokens\",version=\"1\",le=\"100\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("type=\"total_input_tokens\",version=\"1\",le=\"500\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("nv_llm_output_token_len_sum{model=\"tensorrt_llm\",response_"
                              "metric_type=\"total_output_tokens\",version=\"1\"} 7000\n"));
}

TEST(RenderMetricsTest, DcgmSeriesWhenAsked) {
  const std::string text = sim::RenderMetrics(api::Engine::kVllm, SomeLoad(), kLabels, true);
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu="
                              "\"0\",UUID=\"GPU-"));
  EXPECT_THAT(text, HasSubstr(",namespace=\"ns\",pod=\"web-0\"} 312.5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  EXPECT_THAT(text, HasSubstr(",namespace=\"ns\",pod=\"web-0\"} 123456789\n"));
}

TEST(RenderMetricsTest, EscapesLabelValues) {
  const sim::MetricsLabels odd{.model = "a\"b\\c\nd"};
  EXPECT_THAT(sim::RenderMetrics(api::Engine::kVllm, {}, odd, false),
              HasSubstr("{model_name=\"a\\\"b\\\\c\\nd\"} 0\n"));
}

// Every form is valid exposition text. promtool's linter (2.42) also reports names that break
// its conventions, and real engines break two of them: colons in vLLM's and SGLang's names
// (which the linter reserves for recording rules), and a counter without `_total`
// (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, as dcgm-exporter declares it). Those two, and nothing
// else, are allowed.
TEST(RenderMetricsTest, PromtoolAcceptsEveryForm) {
  const std::string promtool = FindPromtool();
  if (promtool.empty()) GTEST_SKIP() << "promtool is not on PATH";
  for (const api::Engine engine :
       {api::Engine::kVllm, api::Engine::kSglang, api::Engine::kTrtllm}) {
    for (const bool dcgm : {false, true}) {
      const std::string text = sim::RenderMetrics(engine, SomeLoad(), kLabels, dcgm, 3);
      const auto [status, output] = PromtoolCheckMetrics(promtool, text);
      std::string trace(api::ToString(engine));
      trace.append(dcgm ? " with DCGM" : "").append(":\n").append(text);
      trace.append("\npromtool said:\n").append(output);
      SCOPED_TRACE(trace);
      ASSERT_TRUE(status == 0 || status == 3) << "promtool exit status " << status;
      std::stringstream lines(output);
      for (std::string line; std::getline(lines, line);) {
        if (line.empty()) continue;
        const bool colon = line.find("metric names should not contain ':'") != std::string::npos;
        const bool energy = line.starts_with("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter");
        EXPECT_TRUE(colon || energy) << "unexpected promtool finding: " << line;
      }
      if (engine == api::Engine::kTrtllm && !dcgm) {
        EXPECT_EQ(status, 0);
      }
    }
  }
}

TEST(RenderMetricsTest, PromtoolAcceptsTheExporterPages) {
  const std::string promtool = FindPromtool();
  if (promtool.empty()) GTEST_SKIP() << "promtool is not on PATH";
  const std::vector<sim::ExporterPod> pods = {
      {.pod_namespace = "ns", .pod_name = "web-0", .watts = 250, .joules_total = 1234.5},
      {.pod_namespace = "ns", .pod_name = "web-1", .watts = 300, .joules_total = 99, .gpus = 2}};
  for (const sim::Exporter exporter : {sim::Exporter::kDcgm, sim::Exporter::kKepler}) {
    const std::string text = sim::RenderExporterMetrics(exporter, "gpu-a", pods);
    const auto [status, output] = PromtoolCheckMetrics(promtool, text);
    std::string trace(sim::ExporterName(exporter));
    trace.append(":\n").append(text).append("\npromtool said:\n").append(output);
    SCOPED_TRACE(trace);
    ASSERT_TRUE(status == 0 || status == 3) << "promtool exit status " << status;
    std::stringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      // dcgm-exporter's own names and labels (modelName, Hostname), as the real one writes them.
      EXPECT_TRUE(exporter == sim::Exporter::kDcgm && line.starts_with("DCGM_FI_DEV_"))
          << "unexpected promtool finding: " << line;
    }
  }
}

TEST(EngineTest, ExporterNamesRoundTrip) {
  for (const sim::Exporter exporter : {sim::Exporter::kDcgm, sim::Exporter::kKepler}) {
    EXPECT_EQ(sim::ParseExporter(sim::ExporterName(exporter)), exporter);
  }
  EXPECT_EQ(sim::ParseExporter("DCGM"), std::nullopt);
  std::vector<std::string> problems;
  EXPECT_EQ(ApplyAnnotations({}, {{kExporterAnnotation, "kepler"}}).exporter,
            sim::Exporter::kKepler);
  EXPECT_EQ(ApplyAnnotations({}, {{kExporterAnnotation, "node"}}, &problems).exporter,
            std::nullopt);
  EXPECT_THAT(problems, ::testing::ElementsAre("fake.eoc.dev/exporter: cannot use \"node\""));
}

TEST(EngineTest, NamesRoundTrip) {
  for (const api::Engine engine :
       {api::Engine::kVllm, api::Engine::kSglang, api::Engine::kTrtllm}) {
    EXPECT_EQ(sim::ParseEngine(api::ToString(engine)), engine);
  }
  EXPECT_EQ(sim::ParseEngine("VLLM"), std::nullopt);
  EXPECT_EQ(sim::ParseEngine(""), std::nullopt);
}

TEST(ApplyAnnotationsTest, ReadsWhatItCanAndNamesTheRest) {
  std::vector<std::string> problems;
  FakeWorkerOptions o = ApplyAnnotations({.model = "default"},
                                         {{kEngineAnnotation, "trtllm"},
                                          {kDelayAnnotation, "250"},
                                          {kDcgmAnnotation, "true"},
                                          {kModelsAnnotation, "llama,mistral"}},
                                         &problems);
  EXPECT_EQ(o.engine, api::Engine::kTrtllm);
  EXPECT_EQ(o.delay, std::chrono::milliseconds(250));
  EXPECT_TRUE(o.dcgm);
  EXPECT_EQ(o.model, "llama");
  EXPECT_TRUE(problems.empty());

  o = ApplyAnnotations({.model = "default"},
                       {{kModelAnnotation, "qwen"}, {kModelsAnnotation, "llama"}}, &problems);
  EXPECT_EQ(o.model, "qwen");
  EXPECT_EQ(o.engine, api::Engine::kVllm);

  o = ApplyAnnotations(
      {.engine = api::Engine::kSglang, .delay = std::chrono::milliseconds(5)},
      {{kEngineAnnotation, "tgi"}, {kDelayAnnotation, "-1"}, {kDcgmAnnotation, "yes"}}, &problems);
  EXPECT_EQ(o.engine, api::Engine::kSglang);
  EXPECT_EQ(o.delay, std::chrono::milliseconds(5));
  EXPECT_FALSE(o.dcgm);
  ASSERT_EQ(problems.size(), 3U);
  EXPECT_THAT(problems[0], HasSubstr("fake.eoc.dev/engine"));
  EXPECT_THAT(problems[0], HasSubstr("tgi"));
}

TEST(ApplyAnnotationsTest, AMetricsFaultIsChosenByName) {
  std::vector<std::string> problems;
  for (const auto& [name, fault] :
       std::vector<std::pair<std::string, MetricsFault>>{{"hang", MetricsFault::kHang},
                                                         {"trickle", MetricsFault::kTrickle},
                                                         {"huge", MetricsFault::kHuge},
                                                         {"garbage", MetricsFault::kGarbage}}) {
    EXPECT_EQ(ApplyAnnotations({}, {{kMetricsFaultAnnotation, name}}, &problems).metrics_fault,
              fault);
  }
  EXPECT_EQ(ApplyAnnotations({}, {{kMetricsFaultAnnotation, "slow"}}, &problems).metrics_fault,
            MetricsFault::kNone);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_THAT(problems[0], HasSubstr("fake.eoc.dev/metrics-fault"));
}

TEST(ApplyLoadAnnotationsTest, APowerCurveIsReadWholeOrNotAtAll) {
  const auto curve =
      ParsePowerCurve("idle=100,joules-per-token=0.2,tokens-per-second=200-600,period-ms=3000");
  ASSERT_TRUE(curve);
  EXPECT_EQ(*curve, (sim::PowerCurve{.idle_watts = 100,
                                     .joules_per_token = 0.2,
                                     .low_tokens_per_second = 200,
                                     .high_tokens_per_second = 600,
                                     .period = std::chrono::milliseconds(3000)}));
  EXPECT_EQ(ParsePowerCurve("idle=50,joules-per-token=1,tokens-per-second=80")->period,
            std::chrono::milliseconds(5000));
  for (const char* bad : {"", "idle=100", "idle=100,joules-per-token=0.2",
                          "idle=-1,joules-per-token=0.2,tokens-per-second=1",
                          "idle=1,joules-per-token=0.2,tokens-per-second=600-200",
                          "idle=1,joules-per-token=0.2,tokens-per-second=1,period-ms=0",
                          "idle=1,joules-per-token=0.2,tokens-per-second=1,colour=red", "idle 1"}) {
    EXPECT_EQ(ParsePowerCurve(bad), std::nullopt) << bad;
  }
  std::vector<std::string> problems;
  sim::PageFigures load = ApplyLoadAnnotations(
      {}, {{kPowerCurveAnnotation, "idle=100,joules-per-token=0.2,tokens-per-second=200-600"}},
      &problems);
  ASSERT_TRUE(load.power_curve);
  EXPECT_TRUE(problems.empty());
  EXPECT_FALSE(ApplyLoadAnnotations(load, {{kPowerCurveAnnotation, "0"}}).power_curve);
  EXPECT_TRUE(
      ApplyLoadAnnotations(load, {{kPowerCurveAnnotation, "steep"}}, &problems).power_curve);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_THAT(problems[0], HasSubstr("fake.eoc.dev/power-curve: cannot use \"steep\""));
}

// A worker on a curve reports the curve's figures on its page, and goes on along the same curve
// when its load is set again (as the node agent does for every load annotation change).
TEST(FakeWorkerPowerCurveTest, ItsWattsEnergyAndTokensAreWhatItsPageReports) {
  FakeWorker worker({.pod_name = "web-0", .pod_namespace = "ns", .dcgm = true});
  worker.Start();
  sim::PageFigures load{.running = 2,
                        .power_curve = sim::PowerCurve{.idle_watts = 100,
                                                       .joules_per_token = 0.2,
                                                       .low_tokens_per_second = 200,
                                                       .high_tokens_per_second = 600}};
  worker.SetLoad(load);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const sim::PageFigures first = worker.reported_load();
  EXPECT_GE(first.watts, 140);
  EXPECT_LE(first.watts, 220);
  EXPECT_GT(first.generation_tokens_total, 0);
  EXPECT_GT(first.energy_millijoules_total, 0);
  EXPECT_EQ(worker.load().generation_tokens_total, 0);  // as set
  worker.SetLoad(load);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const sim::PageFigures second = worker.reported_load();
  EXPECT_GT(second.generation_tokens_total, first.generation_tokens_total);
  EXPECT_GT(second.energy_millijoules_total, first.energy_millijoules_total);
  EXPECT_NEAR(worker.energy_joules(), second.energy_millijoules_total / 1000.0, 5);
  const std::string page = worker.MetricsText();
  EXPECT_NE(page.find("vllm:generation_tokens_total{"), std::string::npos);
  EXPECT_NE(page.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{"), std::string::npos);
}

TEST(ApplyLoadAnnotationsTest, SetsTheAnnotatedFiguresAndNamesBadValues) {
  std::vector<std::string> problems;
  sim::PageFigures load = ApplyLoadAnnotations({.running = 1, .waiting = 2, .watts = 90},
                                               {{kRunningAnnotation, "240"},
                                                {kKvCacheUsageAnnotation, "0.9"},
                                                {kWattsAnnotation, "380.5"},
                                                {kEngineAnnotation, "vllm"}},
                                               &problems);
  EXPECT_EQ(load.running, 240);
  EXPECT_EQ(load.waiting, 2);  // not annotated: as it was
  EXPECT_DOUBLE_EQ(load.kv_cache_usage, 0.9);
  EXPECT_DOUBLE_EQ(load.watts, 380.5);
  EXPECT_TRUE(problems.empty());

  load = ApplyLoadAnnotations({.running = 3, .waiting = 4, .kv_cache_usage = 0.5, .watts = 90},
                              {{kRunningAnnotation, "-1"},
                               {kWaitingAnnotation, "12 "},
                               {kKvCacheUsageAnnotation, "1.5"},
                               {kWattsAnnotation, "inf"}},
                              &problems);
  EXPECT_EQ(load.running, 3);
  EXPECT_EQ(load.waiting, 4);
  EXPECT_DOUBLE_EQ(load.kv_cache_usage, 0.5);
  EXPECT_DOUBLE_EQ(load.watts, 90);
  ASSERT_EQ(problems.size(), 4U);
  EXPECT_THAT(problems[0], HasSubstr("fake.eoc.dev/running: cannot use \"-1\""));
  EXPECT_THAT(problems[1], HasSubstr("fake.eoc.dev/waiting"));
  EXPECT_THAT(problems[2], HasSubstr("fake.eoc.dev/kv-cache-usage"));
  EXPECT_THAT(problems[3], HasSubstr("fake.eoc.dev/watts"));
}

TEST(ApplyAnnotationsTest, SetsTheStartingLoad) {
  std::vector<std::string> problems;
  const FakeWorkerOptions o =
      ApplyAnnotations({}, {{kWaitingAnnotation, "7"}, {kKvCacheUsageAnnotation, "x"}}, &problems);
  EXPECT_EQ(o.load.waiting, 7);
  EXPECT_DOUBLE_EQ(o.load.kv_cache_usage, 0);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_THAT(problems[0], HasSubstr("fake.eoc.dev/kv-cache-usage"));
}

class FakeWorkerTest : public ::testing::Test {
 protected:
  void Start(FakeWorkerOptions options) {
    options.address = "127.0.0.1:0";
    options.pod_name = "web-0";
    options.pod_namespace = "ns";
    worker_ = std::make_unique<FakeWorker>(std::move(options));
    worker_->Start();
  }
  std::optional<Answer> Get(const std::string& target) const {
    return Fetch(worker_->port(), http::verb::get, target);
  }
  std::optional<Answer> Post(const std::string& target, const std::string& body) const {
    return Fetch(worker_->port(), http::verb::post, target, body);
  }

  std::unique_ptr<FakeWorker> worker_;
};

TEST_F(FakeWorkerTest, AFaultyWorkerAnswersGarbage) {
  Start({.metrics_fault = MetricsFault::kGarbage});
  const auto answer = Get("/metrics");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  EXPECT_THAT(answer->body, HasSubstr("not a metrics page"));
}

TEST_F(FakeWorkerTest, ServesMetricsWithTheValuesSet) {
  Start({.engine = api::Engine::kSglang, .model = "llama", .dcgm = true});
  EXPECT_EQ(worker_->endpoint(), "127.0.0.1:" + std::to_string(worker_->port()));
  worker_->SetLoad(SomeLoad());
  auto answer = Get("/metrics");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->content_type, server::kPrometheusContentType);
  EXPECT_EQ(answer->worker, "ns/web-0");
  EXPECT_EQ(answer->body, worker_->MetricsText());
  EXPECT_THAT(answer->body, HasSubstr("sglang:num_running_reqs{model_name=\"llama\"} 3\n"));
  EXPECT_THAT(answer->body, HasSubstr(",namespace=\"ns\",pod=\"web-0\"} 312.5\n"));

  sim::PageFigures load = worker_->load();
  load.running = 9;
  worker_->SetLoad(load);
  answer = Get("/metrics");
  ASSERT_TRUE(answer.has_value());
  EXPECT_THAT(answer->body, HasSubstr("sglang:num_running_reqs{model_name=\"llama\"} 9\n"));

  answer = Get("/health");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
}

TEST_F(FakeWorkerTest, IntegratesItsWattsIntoJoules) {
  Start({.load = {.watts = 1000}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double first = worker_->energy_joules();
  EXPECT_GE(first, 100);
  worker_->SetLoad({.watts = 0});
  const double stopped = worker_->energy_joules();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_DOUBLE_EQ(worker_->energy_joules(), stopped);  // no draw, no energy
}

TEST_F(FakeWorkerTest, AnExporterServesThePodsItIsGiven) {
  Start({.exporter = sim::Exporter::kDcgm, .node_name = "gpu-a", .exporter_pods = [] {
           return std::vector<sim::ExporterPod>{
               {.pod_namespace = "ns", .pod_name = "web-1", .watts = 275.5, .joules_total = 12}};
         }});
  const auto answer = Get("/metrics");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  EXPECT_THAT(answer->body, HasSubstr("Hostname=\"gpu-a\""));
  EXPECT_THAT(answer->body,
              HasSubstr("container=\"main\",namespace=\"ns\",pod=\"web-1\",pod_uid=\"\"} 275.5\n"));
  EXPECT_THAT(answer->body, Not(HasSubstr("vllm:")));
}

TEST_F(FakeWorkerTest, AnswersCompletionsAndCountsThem) {
  Start({.model = "llama"});
  auto answer = Post("/v1/completions", R"({"model": "m1", "prompt": "0123456789abcdef",
                                            "max_tokens": 5})");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->worker, "ns/web-0");
  const auto completion = nlohmann::json::parse(answer->body);
  EXPECT_EQ(completion["object"], "text_completion");
  EXPECT_EQ(completion["model"], "m1");
  EXPECT_TRUE(completion["choices"][0]["text"].is_string());
  EXPECT_EQ(completion["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(completion["usage"]["completion_tokens"], 5);

  answer = Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  const auto chat = nlohmann::json::parse(answer->body);
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["model"], "llama");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");

  EXPECT_EQ(worker_->requests_served(), 2);
  // The token totals grow with what was served: 4 + 1 prompt, 5 + 16 generated.
  EXPECT_EQ(worker_->load().prompt_tokens_total, 5);
  EXPECT_EQ(worker_->load().generation_tokens_total, 21);

  answer = Post("/v1/completions", "not json");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 400);
  answer = Post("/v1/chat/completions", R"({"prompt": "wrong field"})");
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 400);
  EXPECT_EQ(worker_->requests_served(), 2);
}

TEST_F(FakeWorkerTest, CompletionsWaitOutTheDelay) {
  Start({.delay = std::chrono::milliseconds(200)});
  const auto start = std::chrono::steady_clock::now();
  const auto answer = Post("/v1/completions", R"({"prompt": "x"})");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 200);
  EXPECT_GE(elapsed, std::chrono::milliseconds(200));  // a lower bound: never a speed

  worker_->SetDelay(std::chrono::milliseconds(0));
  EXPECT_EQ(worker_->delay(), std::chrono::milliseconds(0));
  EXPECT_EQ(Get("/metrics")->status, 200);  // /metrics never waits
}

TEST_F(FakeWorkerTest, CountsRequestsInFlightAndStopWakesThem) {
  Start({.delay = std::chrono::minutes(10), .count_in_flight = true});
  auto pending = std::async(std::launch::async,
                            [this] { return Post("/v1/completions", R"({"prompt": "x"})"); });
  ASSERT_TRUE(Eventually([&] { return worker_->in_flight() == 1; }));
  EXPECT_EQ(worker_->requests_served(), 0);
  EXPECT_THAT(Get("/metrics")->body, HasSubstr("vllm:num_requests_running{model_name="
                                               "\"fake-model\"} 1\n"));
  worker_->Stop();  // returns although a handler was sleeping for ten minutes
  const auto answer = pending.get();
  if (answer.has_value()) {  // or the connection closed first
    EXPECT_EQ(answer->status, 503);
  }
  EXPECT_EQ(worker_->requests_served(), 0);
  EXPECT_EQ(worker_->in_flight(), 0);
}

}  // namespace
}  // namespace eoc::testing
