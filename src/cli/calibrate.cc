// `moetune calibrate MODEL`: a few short real llama-bench runs that pin the
// speed model's free constants on this machine and engine, stored in the
// machine profile; `--measurements FILE` fits from runs made elsewhere and
// `--validate FILE` compares predictions with measurements without fitting.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/machine_flags.h"
#include "cli/model_argument.h"
#include "cli/quiet_machine.h"
#include "cli/validators.h"
#include "engine/calibration_runner.h"
#include "engine/engine_info.h"
#include "engine/llama_bench.h"
#include "hw/machine_profile.h"
#include "model/model_info.h"
#include "report/bench_report.h"
#include "report/calibration_report.h"
#include "speed/presets.h"
#include "util/command_files.h"
#include "util/json_parse.h"
#include "util/read_file.h"
#include "util/timestamp.h"
#include "util/utf8.h"

namespace moetune {
namespace {

// Results of a long sweep are a few MB; the bound stops a wrong path early.
constexpr std::size_t kMaxMeasurementFileBytes = std::size_t{256} << 20;

struct CalibrateArgs {
  std::string model;
  double wait_quiet = 0;  // --wait-quiet[=SECONDS]
  MachineFlags machine;
  bool quick = false;
  std::string stat = "best";
  int repetitions = 3;
  int depth = 2048;
  int deep_depth = 0;
  std::vector<std::string> measurements;
  std::vector<std::string> validate;
  bool no_save = false;
  bool json = false;
  bool dry_run = false;
  std::string output;
  std::string llama_dir;
};

// Records from llama-bench JSONL, a llama-bench JSON array, or `moetune bench --json`.
// `engine` receives the engine build named by the first record ("" when none).
Result<std::vector<Measurement>> ReadMeasurements(const std::string& path, MeasurementStat stat,
                                                  std::string* engine) {
  // Only a regular file, read with a bound: a FIFO or /dev/zero is an error.
  auto read = ReadRegularFile(path, kMaxMeasurementFileBytes);
  if (!read.ok()) return read.take_error().Context("measurements");
  MOETUNE_TRY(NoteInputFile(path, "the --measurements file"));
  const std::string& text = *read;
  std::vector<BenchRecord> records;
  const auto j = ParseJsonOrDiscarded(text);
  if (!j.is_discarded() && (j.is_array() || j.contains("results"))) {
    const auto& items = j.is_array() ? j : j["results"];
    for (const auto& item : items) {
      const auto& rec = item.contains("engine_record") ? item["engine_record"] : item;
      if (!rec.is_object()) continue;
      auto r = ParseBenchRecord(rec.dump());
      if (r.ok()) records.push_back(std::move(r).value());
    }
  } else {
    records = ParseBenchJsonl(text);
  }
  std::vector<Measurement> out;
  for (const auto& r : records) {
    if (engine->empty() && r.raw.contains("build_number") && r.raw["build_number"].is_number()) {
      // The commit may be anything in a file from elsewhere: only a string is used.
      const auto commit = r.raw.find("build_commit");
      *engine =
          fmt::format("llama-bench build {} ({})", r.raw["build_number"].dump(),
                      commit != r.raw.end() && commit->is_string() ? commit->get<std::string>()
                                                                   : std::string("?"));
    }
    auto m = MeasurementFromRecord(r, stat);
    if (m.ok()) out.push_back(std::move(m).value());
  }
  if (out.empty()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("'{}' holds no llama-bench results (expected -o jsonl or -o json "
                             "output, or `moetune bench --json`)",
                             path));
  }
  return out;
}

// Predictions beside measurements. Records of another model file than MODEL
// are predicted with that file, looked up beside MODEL.
Result<std::vector<CalibrationPoint>> ValidateAcrossModels(const std::string& path,
                                                           const ModelInfo& model,
                                                           const MachineSpec& spec,
                                                           const CalibrationConstants& c,
                                                           const std::vector<Measurement>& ms) {
  const std::filesystem::path main(path);
  std::map<std::string, std::vector<Measurement>> by_file;
  std::vector<std::string> order;
  for (const auto& m : ms) {
    const std::string f = m.model_file.empty() ? main.filename().string() : m.model_file;
    if (!by_file.count(f)) order.push_back(f);
    by_file[f].push_back(m);
  }
  std::vector<CalibrationPoint> out;
  for (const auto& f : order) {
    std::optional<ModelInfo> other;
    const ModelInfo* info = &model;
    if (f != main.filename().string()) {
      const std::string sibling = (main.parent_path() / f).string();
      auto o = LoadModelInfo(sibling);
      if (!o.ok()) {
        return o.take_error().Context(
            fmt::format("results of model '{}': put that file beside {} to validate it", f, path));
      }
      other = std::move(o).value();
      info = &*other;
    }
    const SpeedModel sm(*info, spec, c);
    auto pts = ComparePredictions(sm, by_file[f]);
    for (auto& p : pts) {
      if (order.size() > 1) p.label = f + " " + p.label;
    }
    out.insert(out.end(), pts.begin(), pts.end());
  }
  return out;
}

// The measurements of the files given (--validate's, else --measurements'),
// rounds of the same tests (bench/speed/validate.sh interleaves them) as one.
Result<std::vector<Measurement>> ReadInputMeasurements(const CalibrateArgs& a, MeasurementStat stat,
                                                       std::string* engine) {
  std::vector<Measurement> ms;
  for (const auto& path : a.validate.empty() ? a.measurements : a.validate) {
    MOETUNE_ASSIGN_OR_RETURN(auto part, ReadMeasurements(path, stat, engine));
    ms.insert(ms.end(), part.begin(), part.end());
  }
  return MergeMeasurements(ms, stat);
}

// Completes `rec` (what the stored calibration fitted and which engine, when
// and where), stores it in the machine profile unless --no-save, and writes it.
int StoreCalibration(const CalibrateArgs& a, const ResolvedMachine& resolved,
                     const ModelInfo& model, CalibrationRecord rec,
                     const std::vector<std::string>& inputs) {
  if (resolved.calibration) {
    for (const auto& name : resolved.calibration->fitted) {
      if (std::find(rec.fitted.begin(), rec.fitted.end(), name) == rec.fitted.end())
        rec.fitted.push_back(name);
    }
    if (rec.engine_version.empty()) {
      rec.engine_version = resolved.calibration->engine_version;
      rec.engine_build = resolved.calibration->engine_build;
    }
  }
  rec.created_at = NowUtcIso8601();
  rec.model_path = a.model;
  rec.model_name = model.arch.hp.name.empty() ? a.model : model.arch.hp.name;
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) rec.hostname = host;

  if (!a.no_save) {
    if (!resolved.profile_found) {
      return ReportError(Error(ErrorKind::kNotFound,
                               fmt::format("no machine profile at '{}' to store the calibration "
                                           "in: run `moetune doctor` first, or pass --no-save",
                                           resolved.profile_path)));
    }
    auto profile = LoadMachineProfile(resolved.profile_path);
    if (!profile.ok()) return ReportError(profile.error());
    profile->calibration = CalibrationRecordToJson(rec);
    if (auto st = SaveMachineProfile(*profile, resolved.profile_path); !st.ok())
      return ReportError(st.error());
    std::cerr << ForTerminal("moetune: calibration saved in " + resolved.profile_path + "\n");
  }
  const std::string text = a.json ? JsonOutput(CalibrationRecordToJson(rec)) : CalibrationText(rec);
  auto st = WriteOutput(a.output, text, inputs);
  return st.ok() ? kExitOk : ReportError(st.error());
}

int Run(const CalibrateArgs& a) {
  auto resolved = ResolveMachine(a.machine);
  if (!resolved.ok()) return ReportError(resolved.error());
  auto model = LoadModelInfo(a.model);
  if (!model.ok()) return ReportError(model.error());
  MachineSpec spec = resolved->spec;
  for (const auto& n : spec.notes) std::cerr << ForTerminal("moetune: note: " + n + "\n");
  // Every file read is an input: `-o` onto one of them is refused.
  std::vector<std::string> inputs = ModelFiles(*model);
  inputs.insert(inputs.end(), a.measurements.begin(), a.measurements.end());
  inputs.insert(inputs.end(), a.validate.begin(), a.validate.end());

  auto stat = ParseMeasurementStat(a.stat);  // validated

  std::string measured_engine;
  auto read = ReadInputMeasurements(a, *stat, &measured_engine);
  if (!read.ok()) return ReportError(read.error());
  const std::vector<Measurement> ms = std::move(read).value();
  const bool any_rpc = std::any_of(ms.begin(), ms.end(), [](const auto& m) { return m.rpc; });
  if (any_rpc && !spec.accel()) {
    (void)ApplyMachinePreset("rpc-cpu", &spec);
    std::cerr << "moetune: note: results measured with the RPC device: modelling it as "
                 "--machine rpc-cpu\n";
  }

  if (!a.validate.empty()) {
    std::cerr << ForTerminal(
        fmt::format("moetune: predicting with {} constants\n",
                    resolved->calibration ? "calibrated (" + resolved->calibration->created_at + ")"
                                          : std::string("default")));
    auto pts = ValidateAcrossModels(a.model, *model, spec, resolved->constants, ms);
    if (!pts.ok()) return ReportError(pts.error());
    const std::string text = a.json ? JsonOutput(ValidationJson(*pts)) : ValidationText(*pts);
    auto st = WriteOutput(a.output, text, inputs);
    return st.ok() ? kExitOk : ReportError(st.error());
  }

  // Start from the stored calibration: runs that pin only some constants (RPC
  // runs pin the link) keep the others.
  const SpeedModel sm(*model, spec, resolved->constants);
  CalibrationRecord rec;
  EngineInfo engine;
  if (!ms.empty()) {
    rec = CalibrateFromMeasurements(sm, ms);
    rec.engine_version = measured_engine;
  } else {
    DiscoveryOptions d;
    d.llama_dir = a.llama_dir;
    auto info = DiscoverEngine(d);
    if (!info.ok()) return ReportError(info.error());
    engine = *info;
    CalibrationRunOptions o;
    o.quick = a.quick;
    o.repetitions = a.repetitions;
    o.depth = a.depth;
    o.deep_depth = a.deep_depth;
    const auto configs = CalibrationConfigs(a.model, sm, o);
    LlamaBenchEngine bench(engine);
    if (a.dry_run) {
      auto st = WriteOutput(a.output, InvocationLines(bench, configs), inputs);
      return st.ok() ? kExitOk : ReportError(st.error());
    }
    if (auto busy = CheckQuietMachine(a.wait_quiet))
      std::cerr << ForTerminal("moetune: WARNING: " + *busy + "\n");
    std::cerr << ForTerminal(
        fmt::format("moetune: calibrating with {} short runs of {} (about a minute)...\n",
                    configs.size(), a.model));
    const ProgressCallback progress = ::isatty(2) ? TerminalProgress() : ProgressCallback();
    std::vector<std::string> failures;
    auto r = RunCalibration(bench, configs, sm, &failures, progress, *stat);
    if (::isatty(2)) std::cerr << "\n";
    for (const auto& f : failures) std::cerr << ForTerminal("moetune: run failed: " + f + "\n");
    if (!r.ok()) return ReportError(r.error());
    rec = std::move(r).value();
    rec.engine_version = engine.version_line;
    rec.engine_build = engine.build_number;
  }
  return StoreCalibration(a, *resolved, *model, std::move(rec), inputs);
}

}  // namespace

void RegisterCalibrateCommand(CLI::App& app, CommandRun* run) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Pin the speed model's constants with a few short real runs on this machine");
  cmd->add_option("model", a->model, "GGUF model file (a small MoE runs fastest)")->required();
  cmd->add_flag("--quick", a->quick,
                "One thread count and fewer repetitions (about half the time)");
  cmd->add_option("--stat", a->stat,
                  "Which repetition stands for a test: best (default; interference only slows "
                  "runs down), median or mean")
      ->check(Parses(ParseMeasurementStat, "best|median|mean"));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per run (default 3)")
      ->check(IntRange(1, 50));
  cmd->add_option("--depth", a->depth, "Context depth of the attention runs (default 2048)")
      ->check(IntRange(64, 1 << 20));
  cmd->add_option("--deep-depth", a->deep_depth,
                  "Depth of the decode run beyond the last-level cache (default 0: where the KV "
                  "cache is 1.5x the LLC; -1: none)")
      ->check(IntRange(-1, 1 << 20));
  cmd->add_option("--measurements", a->measurements,
                  "Fit from llama-bench results (JSONL/JSON) instead of running");
  cmd->add_option("--validate", a->validate,
                  "Compare predictions with these results (no fitting, nothing saved)");
  cmd->add_flag("--no-save", a->no_save, "Print the calibration without storing it");
  cmd->add_flag("--dry-run", a->dry_run, "Print the llama-bench command lines and stop");
  AddWaitQuietFlag(cmd, &a->wait_quiet);
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->add_option("-o,--output", a->output, "Write the output to this file");
  cmd->add_option("--llama-dir", a->llama_dir, "Folder with llama.cpp's tools");
  AddMachineFlags(cmd, &a->machine, /*with_vram=*/true, /*with_profile=*/true);
  cmd->callback([a, run] { *run = WithModel(&a->model, [a] { return Run(*a); }); });
}

}  // namespace moetune
