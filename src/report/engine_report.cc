#include "report/engine_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/units.h"

namespace moetune {

std::string FormatEngineInfo(const EngineInfo& info) {
  std::string s;
  s += fmt::format("engine:    {} ({})\n", info.dir, info.origin);
  if (info.version_line.empty()) {
    s += "version:   unknown (no tool printed a version line)\n";
  } else if (info.version_tool == "llama-bench" || info.version_tool.empty()) {
    s += fmt::format("version:   {}\n", info.version_line);
  } else {
    // Builds whose llama-bench has no --version (0.4.0): say where it came from.
    s += fmt::format("version:   {} (from {} --version; this llama-bench has no --version)\n",
                     info.version_line, info.version_tool);
  }
  if (!info.built_with.empty()) s += fmt::format("built:     {}\n", info.built_with);
  if (info.backends.empty()) {
    s += "backends:  unknown (none loaded at start, none linked in, no device listed)\n";
  } else if (info.backend_evidence.empty()) {
    s += fmt::format("backends:  {} ({})\n", fmt::join(info.backends, ", "),
                     BackendSourceName(info.backend_source));
  } else {
    s +=
        fmt::format("backends:  {} ({}: {})\n", fmt::join(info.backends, ", "),
                    BackendSourceName(info.backend_source), fmt::join(info.backend_evidence, ", "));
  }
  if (info.devices.empty()) {
    s += "devices:   none (CPU only)\n";
  } else {
    s += "devices:\n";
    for (const auto& d : info.devices) {
      s += fmt::format("  {}: {}", d.name, d.description);
      if (d.total && d.free)
        s += fmt::format(" ({} total, {} free)", FormatBytes(*d.total), FormatBytes(*d.free));
      s += "\n";
    }
  }
  std::vector<std::string> tools;
  for (const char* t : {"llama-bench", "llama-server", "llama-fit-params", "llama-cli"}) {
    if (info.HasTool(t)) tools.emplace_back(t);
  }
  s += fmt::format("tools:     {}\n", fmt::join(tools, ", "));
  std::vector<std::string> flags;
  for (const char* f : {"-ncmoe", "-ot", "-lm", "-fitt", "--progress", "-d", "-nopo"}) {
    flags.push_back(fmt::format("{}{}", f, info.HasBenchFlag(f) ? "" : " (missing)"));
  }
  s += fmt::format("llama-bench flags: {}\n", fmt::join(flags, ", "));
  for (const auto& w : info.warnings) s += fmt::format("WARNING: {}\n", w);
  return s;
}

nlohmann::json EngineInfoToJson(const EngineInfo& info) {
  using nlohmann::json;
  json devices = json::array();
  for (const auto& d : info.devices) {
    devices.push_back({{"name", d.name},
                       {"description", d.description},
                       {"total_bytes", d.total ? json(d.total->count()) : json(nullptr)},
                       {"free_bytes", d.free ? json(d.free->count()) : json(nullptr)}});
  }
  json tools = json::object();
  for (const char* t : {"llama-bench", "llama-server", "llama-fit-params", "llama-cli"}) {
    tools[t] = info.HasTool(t) ? json(info.ToolPath(t)) : json(nullptr);
  }
  return {{"dir", info.dir},
          {"origin", info.origin},
          {"version_line", info.version_line},
          {"version", info.version},
          {"build_number", info.build_number},
          {"commit", info.commit},
          {"built_with", info.built_with},
          {"version_tool", info.version_tool},
          {"backends", info.backends},
          {"backend_source", BackendSourceName(info.backend_source)},
          {"backend_evidence", info.backend_evidence},
          {"devices", devices},
          {"tools", tools},
          {"bench_flags", info.bench_flags},
          {"server_flags", info.server_flags},
          {"fit_params_flags", info.fit_params_flags},
          {"warnings", info.warnings}};
}

}  // namespace moetune
