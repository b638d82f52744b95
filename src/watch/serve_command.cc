#include "watch/serve_command.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/server_argv.h"
#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "model/context_support.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "util/units.h"

namespace moetune {
std::vector<std::string> ServeArgv(const ServerConfig& base, const ServeCommandOptions& o) {
  ServerConfig c = base;
  c.model = o.model;
  c.host = o.host;
  c.port = o.port;
  c.metrics = true;
  if (o.threads) c.threads = *o.threads;
  return ServerArgv(c, o.server_path);
}

ServerConfig ConfigFromCommand(const std::vector<std::string>& argv,
                               std::vector<std::string>* dropped) {
  ParsedServerCommand cmd = ParseServerArgv(argv);
  if (dropped != nullptr) {
    for (const auto* list : {&cmd.other, &cmd.invalid}) {
      for (const auto& o : *list) {
        const FlagSpec& f = Flag(o.flag);
        dropped->emplace_back(f.spelling);
        if (f.takes_value()) dropped->push_back(o.value);
      }
    }
    dropped->insert(dropped->end(), cmd.not_understood.begin(), cmd.not_understood.end());
  }
  return cmd.config;
}

Result<ServerConfig> PlannedServerConfig(const std::string& model, const ServePlanOptions& o,
                                         std::vector<std::string>* notes) {
  PlanRequest r;
  if (o.devices.empty()) {
    if (notes != nullptr) notes->push_back(GpuBudgetText(o.gpu));
    r.vram_free = o.gpu.free();
    r.reserve = o.gpu.reserve;
  } else {
    r.SetDevices(o.devices);
  }
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
  r.model_path = model;
  MOETUNE_ASSIGN_OR_RETURN(const Plan plan, PlanPlacement(m.gguf, m.arch, m.weights, r));
  if (!plan.config) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} does not fit a GPU with {} free even with every expert on the "
                             "CPU (moetune plan shows the breakdown); lower --ctx or raise --vram",
                             model, FormatBytes(Bytes(r.vram_free - r.reserve))));
  }
  if (notes != nullptr) notes->insert(notes->end(), plan.notes.begin(), plan.notes.end());
  ServerConfig c = *plan.config;
  c.rpc = o.rpc;
  return c;
}

}  // namespace moetune
