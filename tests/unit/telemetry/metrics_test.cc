#include "telemetry/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

namespace eoc::telemetry {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, SerializesRegisteredFamiliesAsPrometheusText) {
  Metrics metrics;
  prometheus::BuildCounter()
      .Name("eoc_test_relists_total")
      .Help("Relists.")
      .Register(metrics.registry())
      .Add({{"resource", "pods"}})
      .Increment(3);
  prometheus::BuildGauge()
      .Name("eoc_test_ready_workers")
      .Help("Ready workers.")
      .Register(metrics.registry())
      .Add({})
      .Set(7);

  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("# HELP eoc_test_relists_total Relists.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE eoc_test_relists_total counter\n"));
  EXPECT_THAT(text, HasSubstr("eoc_test_relists_total{resource=\"pods\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("eoc_test_ready_workers 7\n"));
}

TEST(MetricsTest, EmptyRegistrySerializesToNothing) { EXPECT_EQ(Metrics().Serialize(), ""); }

}  // namespace
}  // namespace eoc::telemetry
