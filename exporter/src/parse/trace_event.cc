// Names of trace schemas (see trace_event.h).
#include "parse/trace_event.h"

namespace profwatch::parse {

std::string_view TraceSchemaName(TraceSchema s) {
  switch (s) {
    case TraceSchema::kJaxTraceEvents:
      return "jax";
    case TraceSchema::kKineto:
      return "kineto";
    case TraceSchema::kXPlane:
      return "xplane";
    case TraceSchema::kNsys:
      return "nsys";
    case TraceSchema::kRocprof:
      return "rocprof";
    case TraceSchema::kUnknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace profwatch::parse
