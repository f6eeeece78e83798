// SnapshotCollectable: renders the latest published snapshot::Snapshot as
// Prometheus metric families at scrape time. Collect() copies the snapshot
// pointer and converts it, nothing more: no I/O, no analysis, no locks beyond
// the store's pointer copy. Names, types, help and labels come from
// expose/metric_names.h (kMetrics, named by enum Metric); a run's window
// series render its figures (RunState::figures, computed by the pipeline
// when its window or step time changed), so a run whose figures are not
// computed exports none.
//
// Thread-safety: Collect() is const and may run concurrently with
// SnapshotStore::Publish() and with other Collect() calls.
// Lifetime: prometheus-cpp's Exposer keeps only a weak_ptr to a registered
// Collectable, so the daemon owns the shared_ptr; the store is shared.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "expose/limits.h"
#include "snapshot/snapshot.h"

namespace profwatch::expose {

// Labels of profwatch_build_info. Defaults are the compile definition
// PROFWATCH_VERSION and BuildRevision(); tests pin them for goldens.
struct BuildInfo {
  std::string version;
  std::string revision;
};
BuildInfo DefaultBuildInfo();

// Pure conversion of one snapshot (what Collect() does after the pointer copy).
// Families appear in kMetrics order; runs in RunKey order; families without
// samples are omitted. Every per-run sample carries training_job and run first,
// then the metric's own labels. Label values are written in core/text.h's
// reversible form (ReversibleUtf8: a byte that is not UTF-8 as \xHH, a `\`
// that would begin an escape doubled), because the text format requires
// UTF-8 and two names that differ only in such bytes must stay two series;
// the exposition's own escaping is left to the serializer.

std::vector<prometheus::MetricFamily> RenderSnapshot(const snapshot::Snapshot& snap,
                                                     const BuildInfo& build);
// The same as exposition text, byte for byte what prometheus-cpp's
// TextSerializer writes for RenderSnapshot's families, written directly
// (without the objects, which take several times the text's memory).
std::string RenderSnapshotText(const snapshot::Snapshot& snap, const BuildInfo& build);

// Label values are made valid UTF-8 with core/text.h's ReversibleUtf8.
using ::profwatch::ReversibleUtf8;
using ::profwatch::ReversibleUtf8Into;
using ::profwatch::ValidUtf8;
using ::profwatch::ValidUtf8Into;

class SnapshotCollectable : public prometheus::Collectable {
 public:
  // REQUIRES: store != nullptr.
  explicit SnapshotCollectable(std::shared_ptr<const snapshot::SnapshotStore> store,
                               BuildInfo build = DefaultBuildInfo());

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::shared_ptr<const snapshot::SnapshotStore> store_;
  BuildInfo build_;
};

}  // namespace profwatch::expose
