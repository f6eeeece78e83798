// Build-time tool: the runbook part of docs/alerts-and-dashboards.md as an
// HTML fragment, written as the C++ source of profwatch::web::RunbookHtml()
// (exporter/src/web/runbook.h), so the daemon serves at /runbook the runbook
// of the docs it was built with (the rules of the same version link there).
//
// Usage: runbook_page IN.md OUT.cc SECTION...
//   SECTION: the text of a level-2 heading of IN.md; the page holds each such
//   section (to the next level-1 or level-2 heading), in the document's
//   order. A SECTION not found is an error (exit 1), so renaming a heading
//   fails the build instead of serving a page without it.
//
// Markdown to HTML is libcmark's (CommonMark). On top of it:
// - every heading gets an id, GitHub's anchor for it (lower case, characters
//   other than letters, digits, '_', '-' and ' ' dropped, spaces to '-'; a
//   repeated one gets -1, -2, ...), the anchors the rules' runbook_url and
//   docs links use (tests/rules/check_alert_annotations.py computes the same);
// - raw HTML of the source (its `<!-- check: ... -->` comments) is dropped;
// - a link to another document, or to a heading outside the page, becomes
//   its text followed by the document it names, "(docs/FILE.md#anchor)":
//   the daemon serves this one page, not the docs beside it.
#include <cmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string TextOf(cmark_node* node) {
  std::string out;
  cmark_iter* it = cmark_iter_new(node);
  for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
    if (ev != CMARK_EVENT_ENTER) continue;
    cmark_node* n = cmark_iter_get_node(it);
    switch (cmark_node_get_type(n)) {
      case CMARK_NODE_TEXT:
      case CMARK_NODE_CODE:
        out += cmark_node_get_literal(n);
        break;
      case CMARK_NODE_SOFTBREAK:
      case CMARK_NODE_LINEBREAK:
        out += ' ';
        break;
      default:
        break;
    }
  }
  cmark_iter_free(it);
  return out;
}

// GitHub's anchor of a heading's text. Bytes of multi-byte UTF-8 characters
// are kept (letters there stay in GitHub's anchors too).
std::string Slug(const std::string& text) {
  size_t b = text.find_first_not_of(" \t");
  size_t e = text.find_last_not_of(" \t");
  std::string trimmed = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  std::string out;
  for (unsigned char c : trimmed) {
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c >= 0x80) {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

bool IsSectionEnd(cmark_node* n) {
  return cmark_node_get_type(n) == CMARK_NODE_HEADING && cmark_node_get_heading_level(n) <= 2;
}

// Replaces `link` by its children followed by " (docs/URL)".
void Flatten(cmark_node* link, const std::string& url) {
  while (cmark_node* child = cmark_node_first_child(link)) {
    cmark_node_unlink(child);
    cmark_node_insert_before(link, child);
  }
  cmark_node* note = cmark_node_new(CMARK_NODE_TEXT);
  // `url` is relative to docs/: named from the repository root.
  const std::string path = url.rfind("../", 0) == 0 ? url.substr(3) : "docs/" + url;
  cmark_node_set_literal(note, (" (" + path + ")").c_str());
  cmark_node_insert_before(link, note);
  cmark_node_free(link);
}

// `html` as C++ string literals, one a line of the page.
std::string CxxLiterals(const std::string& html) {
  std::string out = "      \"";
  for (unsigned char c : html) {
    if (c == '\n') {
      out += "\\n\"\n      \"";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '?') {
      out += "\\?";  // no trigraphs
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "\"";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: runbook_page IN.md OUT.cc SECTION...\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "runbook_page: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream markdown;
  markdown << in.rdbuf();
  const std::string text = markdown.str();
  std::set<std::string> wanted(argv + 3, argv + argc);

  cmark_node* source = cmark_parse_document(text.data(), text.size(), CMARK_OPT_DEFAULT);
  cmark_node* page = cmark_node_new(CMARK_NODE_DOCUMENT);
  std::set<std::string> found;
  for (cmark_node* n = cmark_node_first_child(source); n != nullptr;) {
    if (!(IsSectionEnd(n) && cmark_node_get_heading_level(n) == 2 && wanted.count(TextOf(n)))) {
      n = cmark_node_next(n);
      continue;
    }
    found.insert(TextOf(n));
    do {
      cmark_node* next = cmark_node_next(n);
      cmark_node_unlink(n);
      cmark_node_append_child(page, n);
      n = next;
    } while (n != nullptr && !IsSectionEnd(n));
  }
  cmark_node_free(source);
  for (const std::string& w : wanted) {
    if (!found.count(w)) {
      std::cerr << "runbook_page: " << argv[1] << " has no level-2 heading \"" << w << "\"\n";
      cmark_node_free(page);
      return 1;
    }
  }

  // The headings' anchors, in document order, and what to change.
  std::vector<std::string> anchors;
  std::map<std::string, int> seen;
  std::vector<cmark_node*> raw_html;
  std::vector<cmark_node*> links;
  cmark_iter* it = cmark_iter_new(page);
  for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
    if (ev != CMARK_EVENT_ENTER) continue;
    cmark_node* n = cmark_iter_get_node(it);
    switch (cmark_node_get_type(n)) {
      case CMARK_NODE_HEADING: {
        std::string slug = Slug(TextOf(n));
        const int repeat = seen[slug]++;
        if (repeat > 0) slug += "-" + std::to_string(repeat);
        anchors.push_back(slug);
        break;
      }
      case CMARK_NODE_HTML_BLOCK:
      case CMARK_NODE_HTML_INLINE:
        raw_html.push_back(n);
        break;
      case CMARK_NODE_LINK:
        links.push_back(n);
        break;
      default:
        break;
    }
  }
  cmark_iter_free(it);
  for (cmark_node* n : raw_html) cmark_node_free(n);
  const std::set<std::string> on_page(anchors.begin(), anchors.end());
  for (cmark_node* link : links) {
    const std::string url = cmark_node_get_url(link);
    if (url.find("://") != std::string::npos || url.rfind("mailto:", 0) == 0) continue;
    if (url.rfind("#", 0) == 0) {
      if (!on_page.count(url.substr(1))) Flatten(link, "alerts-and-dashboards.md" + url);
      continue;
    }
    Flatten(link, url);
  }

  char* rendered = cmark_render_html(page, CMARK_OPT_DEFAULT);
  std::string html = rendered;
  std::free(rendered);
  cmark_node_free(page);

  // cmark writes each heading as <hN>; add its id, in the same order.
  std::string out;
  size_t next = 0;
  size_t pos = 0;
  for (;;) {
    size_t at = html.find("<h", pos);
    if (at == std::string::npos) break;
    if (at + 3 < html.size() && html[at + 2] >= '1' && html[at + 2] <= '6' && html[at + 3] == '>') {
      if (next == anchors.size()) {
        std::cerr << "runbook_page: more headings rendered than found\n";
        return 1;
      }
      out += html.substr(pos, at + 3 - pos) + " id=\"" + anchors[next++] + "\">";
      pos = at + 4;
    } else {
      out += html.substr(pos, at + 2 - pos);
      pos = at + 2;
    }
  }
  out += html.substr(pos);
  if (next != anchors.size()) {
    std::cerr << "runbook_page: " << anchors.size() << " headings, " << next << " rendered\n";
    return 1;
  }

  std::ofstream cc(argv[2], std::ios::binary | std::ios::trunc);
  cc << "// Generated at build time by tools/runbook_page from "
        "docs/alerts-and-dashboards.md: do not edit.\n"
        "#include \"web/runbook.h\"\n\n"
        "namespace profwatch::web {\n\n"
        "std::string_view RunbookHtml() {\n"
        "  static constexpr char kHtml[] =\n"
     << CxxLiterals(out)
     << ";\n"
        "  return {kHtml, sizeof kHtml - 1};\n"
        "}\n\n"
        "}  // namespace profwatch::web\n";
  cc.close();
  if (!cc) {
    std::cerr << "runbook_page: cannot write " << argv[2] << "\n";
    return 1;
  }
  return 0;
}
