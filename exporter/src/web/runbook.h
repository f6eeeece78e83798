// The alerts' runbook the daemon serves at /runbook (web/http_server.h).
#pragma once

#include <string_view>

namespace profwatch::web {

// The runbook part of docs/alerts-and-dashboards.md (its "Terms" and
// "Alerts runbook" sections) as an HTML fragment, every heading with an id
// that is its GitHub anchor (#profwatchstepkernelgaphigh): the anchors the
// rules' runbook_url links name. Generated at build time from the docs of
// this source tree (tools/runbook_page), so it is the runbook of the rules
// of the same version.
std::string_view RunbookHtml();

}  // namespace profwatch::web
