#include "store/ollama_name.h"

#include <algorithm>
#include <cctype>

namespace moetune {
namespace {

// types/model/name.go DefaultName().
constexpr std::string_view kDefaultHost = "registry.ollama.ai";
constexpr std::string_view kDefaultNamespace = "library";
constexpr std::string_view kDefaultTag = "latest";

enum class Part { kHost, kNamespace, kModel, kTag };

bool IEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool WordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// name.go isValidPart.
bool ValidPart(Part kind, std::string_view s) {
  const size_t max = kind == Part::kHost ? 350 : 80;
  if (s.empty() || s.size() > max || !WordChar(s[0])) return false;
  for (char c : s.substr(1)) {
    if (WordChar(c) || c == '_' || c == '-') continue;
    if (c == '.' && kind != Part::kNamespace) continue;
    if (c == ':' && kind == Part::kHost) continue;
    return false;
  }
  return true;
}

// Splits at the last `sep`: {before, after, found}.
struct Cut {
  std::string_view before, after;
  bool found = false;
};
Cut CutLast(std::string_view s, char sep) {
  const size_t i = s.rfind(sep);
  if (i == std::string_view::npos) return {s, {}, false};
  return {s.substr(0, i), s.substr(i + 1), true};
}

}  // namespace

std::string OllamaName::Display() const {
  // name.go DisplayShortest.
  std::string out;
  if (!IEqual(host, kDefaultHost)) {
    out = host + "/" + ns + "/";
  } else if (!IEqual(ns, kDefaultNamespace)) {
    out = ns + "/";
  }
  return out + model + ":" + tag;
}

bool OllamaName::EqualFold(const OllamaName& o) const { return SameModel(o) && IEqual(tag, o.tag); }

bool OllamaName::SameModel(const OllamaName& o) const {
  return IEqual(host, o.host) && IEqual(ns, o.ns) && IEqual(model, o.model);
}

std::optional<OllamaName> ParseOllamaName(std::string_view text, bool* tag_given) {
  // name.go ParseNameBare: "/" cannot be in a tag, so a ':' after the last '/'
  // starts the tag; a ':' before it belongs to the host (a port).
  OllamaName n;
  std::string_view s = text;
  bool has_tag = false;
  if (s.rfind(':') != std::string_view::npos &&
      (s.rfind('/') == std::string_view::npos || s.rfind(':') > s.rfind('/'))) {
    const Cut c = CutLast(s, ':');
    s = c.before;
    n.tag = std::string(c.after);
    has_tag = true;
  }
  Cut c = CutLast(s, '/');
  n.model = std::string(c.found ? c.after : s);
  if (c.found) {
    const Cut c2 = CutLast(c.before, '/');
    n.ns = std::string(c2.found ? c2.after : c.before);
    if (c2.found) n.host = std::string(c2.before);
  }
  // name.go ParseName: merged with the defaults.
  if (n.host.empty()) n.host = kDefaultHost;
  if (n.ns.empty()) n.ns = kDefaultNamespace;
  if (n.tag.empty() && !has_tag) n.tag = kDefaultTag;
  if (!ValidPart(Part::kHost, n.host) || !ValidPart(Part::kNamespace, n.ns) ||
      !ValidPart(Part::kModel, n.model) || !ValidPart(Part::kTag, n.tag)) {
    return std::nullopt;
  }
  if (tag_given != nullptr) *tag_given = has_tag;
  return n;
}

}  // namespace moetune
