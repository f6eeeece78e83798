// The metrics table (metric_names.h) follows the naming contract: the
// prefix, one row per name, the unit the name carries, _total on counters
// alone, info gauges; and Spec(Metric) finds each row by its enumerator.
#include "expose/metric_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace profwatch::expose {
namespace {

TEST(MetricNamesTest, EveryRowFollowsTheNamingContract) {
  std::set<std::string_view> names;
  for (const MetricSpec& m : kMetrics) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(m.name.starts_with("profwatch_"));
    EXPECT_TRUE(names.insert(m.name).second) << "declared twice";
    EXPECT_EQ(&Spec(m.id), &m);
    EXPECT_FALSE(m.help.empty());
    const bool counter = m.type == MetricType::kCounter;
    EXPECT_EQ(m.name.ends_with("_total"), counter);
    std::string_view base = m.name;
    if (counter) base.remove_suffix(std::string_view("_total").size());
    if (!m.unit.empty()) {
      // The unit ends the name, or names what is counted (bytes_read_total).
      const std::string unit = "_" + std::string(m.unit);
      EXPECT_TRUE(base.ends_with(unit) || base.find(unit + "_") != std::string_view::npos)
          << "unit " << m.unit;
    }
    if (m.unit == "info") {
      EXPECT_EQ(m.type, MetricType::kGauge);
    }
    // Registries hold counters and histograms; the snapshot writes gauges
    // and summaries (the front door's reload gauge lives in a registry).
    if (m.source == Source::kSnapshot) {
      EXPECT_TRUE(!counter && m.type != MetricType::kHistogram);
    }
    for (std::string_view l : m.labels) {
      EXPECT_NE(l, "job");
      EXPECT_NE(l, "instance");
    }
  }
}

// Detail metrics (serve --metrics-detail) are per-run series of the
// snapshot: the flag changes what a scrape renders, never a counter.
TEST(MetricNamesTest, DetailMetricsArePerRunSnapshotSeries) {
  std::set<Metric> seen;
  for (Metric m : kDetailMetrics) {
    SCOPED_TRACE(Spec(m).name);
    EXPECT_TRUE(seen.insert(m).second) << "listed twice";
    EXPECT_TRUE(IsDetail(m));
    EXPECT_TRUE(Spec(m).per_run);
    EXPECT_EQ(Spec(m).source, Source::kSnapshot);
  }
  EXPECT_FALSE(IsDetail(Metric::kFamilyKernelSeconds));
  EXPECT_FALSE(IsDetail(Metric::kWindowRawFamilyKernelSeconds));
}

TEST(MetricNamesTest, ProcessMetricsAreFoundByEnumeratorAndName) {
  for (const ProcessMetricSpec& m : kProcessMetrics) {
    EXPECT_EQ(&Spec(m.id), &m);
    EXPECT_EQ(FindProcessMetric(m.name), &m);
  }
  EXPECT_EQ(FindMetric("profwatch_no_such_metric"), nullptr);
  EXPECT_EQ(FindMetric(Spec(Metric::kMfuRatio).name), &Spec(Metric::kMfuRatio));
}

}  // namespace
}  // namespace profwatch::expose
