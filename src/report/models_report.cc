#include "report/models_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "store/reference.h"
#include "util/table.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string Size(uint64_t bytes) {
  if (bytes == 0) return "?";
  const auto max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return FormatBytes(Bytes(static_cast<int64_t>(std::min(bytes, max))));
}

std::string Experts(const StoredModel& m) {
  if (!m.details) return "";
  if (!m.details->moe) return "dense";
  return fmt::format("MoE {}/{}", m.details->n_expert_used, m.details->n_expert);
}

std::string Architecture(const StoredModel& m) {
  if (!m.details) return "";
  std::string a = m.details->architecture;
  if (!m.details->size_label.empty()) a += " " + m.details->size_label;
  if (!m.details->known_architecture) a += " (unknown to moetune)";
  return a;
}

std::string Readable(const StoredModel& m) {
  if (m.usable()) return "yes";
  if (m.problem == EntryProblem::kBadHeader) return "yes, bad header";
  return fmt::format("no: {}", EntryProblemName(m.problem));
}

std::string PlaceState(const RootScan& s) {
  if (!s.exists) return "not there";
  if (!s.access.ok()) return "cannot be searched: " + DescribeAccess(s.access);
  return fmt::format("{} model(s)", s.models.size());
}

nlohmann::json DetailsJson(const StoredModel& m) {
  if (!m.details) return nullptr;
  const ModelDetails& d = *m.details;
  return {{"architecture", d.architecture},
          {"model_name", d.model_name},
          {"size_label", d.size_label},
          {"quant", d.quant},
          {"known_architecture", d.known_architecture},
          {"moe", d.moe},
          {"experts", d.n_expert},
          {"experts_used", d.n_expert_used},
          {"layers", d.n_layer}};
}

nlohmann::json ModelJson(const StoredModel& m, const std::vector<const StoredModel*>& all) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : m.parts) {
    parts.push_back({{"path", p.path}, {"size_bytes", p.size}, {"present", p.present}});
  }
  const std::string ref = ReferenceFor(m, all);
  nlohmann::json problem = nullptr;
  if (!m.usable()) {
    problem = {{"kind", EntryProblemName(m.problem)}, {"message", m.problem_message}};
  }
  return {
      {"store", StoreKindName(m.store)},
      {"reference", ref.empty() ? nlohmann::json(nullptr) : nlohmann::json(ref)},
      {"name", m.name},
      {"path", m.path},
      {"file", m.file},
      {"root", m.root},
      {"digest", m.digest.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.digest)},
      {"size_bytes", m.size()},
      {"parts", parts},
      {"readable", m.problem != EntryProblem::kAccess && m.problem != EntryProblem::kMissingBlob &&
                       m.problem != EntryProblem::kMissingPart},
      {"usable", m.usable()},
      {"problem", problem},
      {"details", DetailsJson(m)}};
}

}  // namespace

std::string FormatModelListing(const ModelListing& listing) {
  using A = MarkdownTable::Align;
  const auto all = listing.Models();
  MarkdownTable t({{"model", A::kLeft},
                   {"architecture", A::kLeft},
                   {"experts", A::kLeft},
                   {"size", A::kRight},
                   {"quant", A::kLeft},
                   {"parts", A::kRight},
                   {"readable", A::kLeft},
                   {"path", A::kLeft}});
  std::string problems;
  for (const StoredModel* m : all) {
    const std::string ref = ReferenceFor(*m, all);
    const std::string quant = m->details ? m->details->quant : m->tag;
    t.AddRow({ref.empty() ? fmt::format("({}) {}", StoreKindName(m->store), m->name) : ref,
              Architecture(*m), Experts(*m), Size(m->size()),
              m->store == StoreKind::kOllama && !m->details ? "" : quant,
              std::to_string(m->parts.size()), Readable(*m), m->path});
    if (!m->usable()) {
      problems += fmt::format("- {}: {}\n", ref.empty() ? m->path : ref, m->problem_message);
    }
  }
  std::string out = all.empty()
                        ? "No GGUF models found.\n"
                        : fmt::format("{} model(s) on this machine:\n\n{}", all.size(), t.Render());
  if (!problems.empty()) out += "\nProblems:\n" + problems;
  out += "\nSearched:\n";
  for (const auto& s : listing.places) {
    out += fmt::format("- {} ({}, {}): {}\n", s.root.path, StoreKindName(s.root.kind),
                       s.root.source, PlaceState(s));
    if (s.exists && !s.access.ok()) out += "  " + AccessFix(s.access, s.root.kind) + "\n";
    for (const auto& n : s.notes) out += "  note: " + n + "\n";
  }
  out +=
      "\nGive a reference (or a path) as MODEL to any command: moetune plan REFERENCE --ctx 32K\n";
  return out;
}

nlohmann::json ModelListingToJson(const ModelListing& listing) {
  const auto all = listing.Models();
  nlohmann::json models = nlohmann::json::array();
  for (const StoredModel* m : all) models.push_back(ModelJson(*m, all));
  nlohmann::json searched = nlohmann::json::array();
  for (const auto& s : listing.places) {
    const bool blocked = s.exists && !s.access.ok();
    searched.push_back(
        {{"store", StoreKindName(s.root.kind)},
         {"path", s.root.path},
         {"source", s.root.source},
         {"exists", s.exists},
         {"searchable", s.exists && s.access.ok()},
         {"problem", blocked ? nlohmann::json(DescribeAccess(s.access)) : nlohmann::json(nullptr)},
         {"fix",
          blocked ? nlohmann::json(AccessFix(s.access, s.root.kind)) : nlohmann::json(nullptr)},
         {"models", s.models.size()},
         {"notes", s.notes}});
  }
  return {{"models", models}, {"searched", searched}};
}

}  // namespace moetune
