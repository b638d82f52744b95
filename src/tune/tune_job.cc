#include "tune/tune_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "engine/perf_bridge.h"
#include "speed/speed_model.h"
#include "tune/space.h"
#include "util/cache_dir.h"

namespace moetune {

std::string ModelFingerprint(const ModelInfo& m) {
  return fmt::format("{} ({}, {} tensors, {} bytes of tensors, {})", m.arch.hp.name, m.arch.hp.arch,
                     m.gguf.tensors.size(), m.weights.total, GgufFingerprint(m.gguf));
}

std::string DefaultTuneJournalPath(const std::string& model_path, int64_t ctx,
                                   const std::string& workload, const std::string& suffix) {
  const std::string base = MoetuneCacheDir();
  if (base.empty()) return "";
  const std::string stem = std::filesystem::path(model_path).stem().string();
  std::string safe_workload = workload;
  std::replace(safe_workload.begin(), safe_workload.end(), ':', '-');
  return fmt::format("{}/tune/{}-{}-{}{}.journal", base, stem, ctx, safe_workload, suffix);
}

namespace {

// The report's header: what the tune runs on, before anything is measured.
TuneReport ReportHeader(const TuneJobRequest& q, const TuneMachine& machine) {
  TuneReport r;
  r.model_path = q.model_path;
  r.model_name = q.model->arch.hp.name;
  r.ctx = q.ctx;
  r.workload = q.workload;
  r.engine = machine.engine_line;
  r.simulated = machine.simulated;
  r.machine = machine.machine_line;
  r.checks = machine.checks;
  r.reproduce = q.reproduce;
  return r;
}

Result<std::unique_ptr<Journal>> OpenJournal(const TuneJobRequest& q, const TuneMachine& machine,
                                             std::vector<std::string>* notes) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(q.journal_path).parent_path(), ec);
  JournalIdentity id = machine.identity;
  id.model = ModelFingerprint(*q.model);
  return Journal::Open(q.journal_path, id, notes);
}

}  // namespace

TuneMachine TuneMachineFromSpec(const MachineSpec& spec, const CalibrationConstants& constants) {
  TuneMachine m;
  m.has_gpu = spec.has_gpu();
  m.cpu = SimulatedCpuTopology(spec.cpu);
  if (spec.accel()) {
    m.vram_free = spec.accel()->vram_free;
    m.reserve = spec.reserve;
    if (spec.accel()->kind == AcceleratorKind::kRpcCpu) m.device_kind = DeviceKind::kRpc;
  }
  const std::vector<AcceleratorSpec> singles = spec.SingleDevices();
  if (singles.size() > 1) {
    const std::vector<std::string> names = spec.DeviceNames();
    m.vram_free = 0;
    // In llama.cpp's own order (RPC devices first), the tune's starting -dev.
    for (size_t i : DefaultDeviceOrder(names)) {
      m.devices.push_back(
          {names[i], singles[i].vram_free, spec.reserve,
           singles[i].kind == AcceleratorKind::kRpcCpu ? DeviceKind::kRpc : DeviceKind::kCuda});
      m.vram_free += singles[i].vram_free;
    }
    m.reserve = spec.reserve * static_cast<int64_t>(singles.size());
  }
  m.spec = spec;
  m.constants = constants;
  return m;
}

TuneSpace TuneJobSpace(const TuneJobRequest& q, const TuneMachine& machine,
                       std::vector<std::string>* notes) {
  SpaceInputs in;
  in.model = q.model;
  in.engine_has_gpu = machine.has_gpu;
  in.cpu = &machine.cpu;
  in.threads_override = q.threads;
  in.rpc = machine.rpc;
  if (machine.vram_free > 0) {
    PlanRequest req;
    req.vram_free = machine.vram_free;
    req.reserve = machine.reserve;
    req.device_kinds = {machine.device_kind};
    if (machine.devices.size() > 1) req.devices = machine.devices;
    req.ctx.n_ctx = q.ctx;
    in.plan = req;
  }
  TuneSpace space = BuildTuneSpace(in, notes);
  if (machine.spec) {
    // Shared by copies of the space; the model outlives the job.
    auto sm = std::make_shared<SpeedModel>(*q.model, *machine.spec, machine.constants);
    space.predicted_tps = [sm](const RunConfig& c) -> std::optional<double> {
      auto settings = RunSettingsFromConfig(c);
      if (!settings.ok()) return std::nullopt;
      auto p = sm->Predict(*settings);
      if (!p.ok() || !p->loads) return std::nullopt;
      return p->tokens_per_second;
    };
  }
  return space;
}

Result<TuneJobResult> RunTuneJob(const TuneJobRequest& q, const TuneMachine& machine,
                                 Engine& engine, const TuneJobHooks& hooks) {
  if (q.model == nullptr) {
    return Error(ErrorKind::kInternal, "tune: the request carries no model");
  }
  TuneJobResult out;
  out.report = ReportHeader(q, machine);
  TuneReport& report = out.report;
  std::vector<std::string> notes = machine.notes;
  const TuneSpace space = TuneJobSpace(q, machine, &notes);
  if (machine.vram_free > 0) {
    report.vram_budget = machine.vram_free - machine.reserve;
    report.reserve = machine.reserve;
  }

  // The journal: resume what an earlier run measured.
  std::unique_ptr<Journal> journal;
  if (!q.journal_path.empty()) {
    MOETUNE_ASSIGN_OR_RETURN(journal, OpenJournal(q, machine, &notes));
    report.journal = q.journal_path;
  }
  if (hooks.before_measuring) hooks.before_measuring(notes);

  TuneOptions opt;
  opt.ctx = q.ctx;
  opt.workload = q.workload;
  opt.budget_seconds = q.budget_seconds;
  opt.repetitions = q.repetitions;
  opt.take_proven_edge = q.proven_edge;
  Tuner tuner(engine, space, opt, journal.get(), hooks.progress);
  report.result = tuner.Run();
  report.result.notes.insert(report.result.notes.begin(), notes.begin(), notes.end());
  if (journal && journal->unsaved() > 0) {
    out.journal_error = Error(
        ErrorKind::kIo,
        fmt::format("{} of {} measurement(s) were not saved to the journal '{}' ({}); the result "
                    "above is complete, but running the command again measures those again",
                    journal->unsaved(), journal->results().size() - journal->resumed(),
                    journal->path(), journal->write_error()->message()));
  }
  return out;
}

}  // namespace moetune
