#include "watch/serve_command.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "model/context_support.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "util/units.h"

namespace moetune {
namespace {

bool Is(const std::string& a, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), a) != names.end();
}

// Removes every occurrence of a flag (and its value when it takes one).
void Remove(std::vector<std::string>* args, const std::vector<std::string>& names,
            bool takes_value) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args->size(); ++i) {
    if (Is((*args)[i], names)) {
      if (takes_value) ++i;
      continue;
    }
    out.push_back((*args)[i]);
  }
  *args = std::move(out);
}

}  // namespace

std::optional<std::string> FlagValue(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& names) {
  for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
    if (Is(argv[i], names)) return argv[i + 1];
  }
  return std::nullopt;
}

std::vector<std::string> ServeArgv(const std::vector<std::string>& base,
                                   const ServeCommandOptions& o) {
  std::vector<std::string> args(base.begin() + (base.empty() ? 0 : 1), base.end());
  Remove(&args, {"-m", "--model"}, true);
  Remove(&args, {"--host"}, true);
  Remove(&args, {"--port"}, true);
  Remove(&args, {"--metrics"}, false);
  Remove(&args, {"--no-slots"}, false);
  if (o.threads) Remove(&args, {"-t", "--threads"}, true);
  std::vector<std::string> argv = {o.server_path, "-m", o.model};
  argv.insert(argv.end(), args.begin(), args.end());
  if (o.threads) argv.insert(argv.end(), {"-t", std::to_string(*o.threads)});
  argv.insert(argv.end(), {"--host", o.host, "--port", std::to_string(o.port), "--metrics"});
  return argv;
}

Result<std::vector<std::string>> PlannedServerCommand(const std::string& model,
                                                      const ServePlanOptions& o,
                                                      std::vector<std::string>* notes) {
  PlanRequest r;
  if (o.vram_free) {
    r.vram_free = *o.vram_free;
  } else {
    const std::string path = o.profile.empty() ? DefaultMachineProfilePath() : o.profile;
    auto profile = path.empty() ? Result<MachineProfile>(Error(ErrorKind::kNotFound, "no path"))
                                : LoadMachineProfile(path);
    if (!profile.ok() || profile->gpus.empty()) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("no --vram given and no GPU in the machine profile ({}): pass "
                               "--vram SIZE (free VRAM, e.g. --vram 12GiB), run moetune doctor "
                               "first, or serve a tuned configuration with --from FILE",
                               profile.ok() ? path + " lists no GPU" : profile.error().message()));
    }
    r.vram_free = profile->gpus.front().free_bytes;
    if (notes != nullptr)
      notes->push_back(fmt::format("--vram from {}: {} free on {}", path,
                                   FormatBytes(Bytes(r.vram_free)), profile->gpus.front().name));
  }
  if (o.reserve > r.vram_free) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--reserve {} is more than the free VRAM {}",
                             FormatBytes(Bytes(o.reserve)), FormatBytes(Bytes(r.vram_free))));
  }
  r.reserve = o.reserve;
  r.margin = o.margin;
  r.host_ram_available = ReadSystemMemory(SysRoot("/")).available_bytes;
  r.ctx.n_ctx = o.n_ctx;
  auto type_k = ParseKvCacheType(o.type_k);
  if (!type_k.ok()) return type_k.take_error().Context("--ctk");
  auto type_v = ParseKvCacheType(o.type_v);
  if (!type_v.ok()) return type_v.take_error().Context("--ctv");
  r.ctx.type_k = *type_k;
  r.ctx.type_v = *type_v;
  r.ctx.n_batch = o.n_batch;
  r.ctx.n_ubatch = std::min<int64_t>(o.n_ubatch, o.n_batch);
  r.ctx.n_seq = o.n_parallel;
  r.ctx.flash_attn = o.flash_attn;
  MOETUNE_ASSIGN_OR_RETURN(ModelInfo m, LoadModelInfo(model));
  MOETUNE_ASSIGN_OR_RETURN(const Plan plan, PlanPlacement(m.gguf, m.arch, m.weights, r));
  if (!plan.launch) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} does not fit a GPU with {} free even with every expert on the "
                             "CPU (moetune plan shows the breakdown); lower --ctx or raise --vram",
                             model, FormatBytes(Bytes(r.vram_free - r.reserve))));
  }
  if (notes != nullptr) notes->insert(notes->end(), plan.notes.begin(), plan.notes.end());
  return ServerArgs(model, *plan.launch);
}

}  // namespace moetune
