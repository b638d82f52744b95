#include "hw/machine_profile.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "util/command_files.h"
#include "util/json_fields.h"
#include "util/json_parse.h"
#include "util/output_file.h"
#include "util/read_file.h"
#include "util/utf8.h"

namespace moetune {

using nlohmann::json;

int64_t MachineProfile::TotalFreeVramBytes() const {
  int64_t sum = 0;
  for (const auto& g : gpus) sum += g.free_bytes;
  return sum;
}

namespace {

json OptionalJson(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

json GpuToJson(const GpuInfo& g) {
  json procs = json::array();
  for (const auto& p : g.processes) {
    procs.push_back({{"pid", p.pid}, {"name", p.name}, {"used_bytes", OptionalJson(p.used_bytes)}});
  }
  return {{"index", g.index},
          {"vendor", g.vendor},
          {"name", g.name},
          {"pci_bus_id", g.pci_bus_id},
          {"total_bytes", g.total_bytes},
          {"free_bytes", g.free_bytes},
          {"used_bytes", g.used_bytes},
          {"reserved_bytes", g.reserved_bytes},
          {"used_by_others_bytes", g.used_by_others_bytes},
          {"memory_query", g.memory_query},
          {"processes_known", g.processes_known},
          {"processes", procs},
          {"pcie",
           {{"gen_current", g.pcie_gen_current},
            {"gen_max", g.pcie_gen_max},
            {"width_current", g.pcie_width_current},
            {"width_max", g.pcie_width_max},
            {"bandwidth_gbps", g.pcie_bandwidth_gbps}}},
          {"memory_bus_width_bits", g.memory_bus_width_bits},
          {"memory_clock_max_mhz", g.memory_clock_max_mhz},
          {"peak_bandwidth_gbps", g.peak_bandwidth_gbps},
          {"gtt_total_bytes", g.gtt_total_bytes},
          {"gtt_used_bytes", g.gtt_used_bytes},
          {"notes", g.notes}};
}

// Ranges of the saved fields: generous for every machine, tight enough that a
// damaged or hand-edited profile cannot bring negative or absurd figures in.
constexpr const char* kProfileInput = "the machine profile";
constexpr int64_t kMaxMemory = int64_t{1} << 50;  // 1 PiB of GPU or host memory
constexpr int64_t kMaxCount = 1 << 20;            // devices, cores, CPUs, threads
constexpr double kMaxGbps = 1e6;                  // 1 PB/s

GpuInfo GpuFromJson(const json& j, const std::string& where, JsonFields* parent) {
  JsonFields f(j, where);
  GpuInfo g;
  g.index = static_cast<int>(f.Int("index", 0, kMaxCount));
  g.vendor = f.String("vendor");
  g.name = f.String("name");
  g.pci_bus_id = f.String("pci_bus_id", "");
  g.total_bytes = f.Int("total_bytes", 0, kMaxMemory);
  // Free memory above the total is a damaged profile, not a bigger GPU.
  g.free_bytes = f.Int("free_bytes", 0, g.total_bytes);
  g.used_bytes = f.Int("used_bytes", 0, kMaxMemory, 0);
  g.reserved_bytes = f.Int("reserved_bytes", 0, kMaxMemory, 0);
  g.used_by_others_bytes = f.Int("used_by_others_bytes", 0, kMaxMemory);
  g.memory_query = f.String("memory_query", "");
  g.processes_known = f.Bool("processes_known", false);
  if (const json* procs = f.OptionalArray("processes")) {
    for (size_t i = 0; i < procs->size() && f.ok(); ++i) {
      JsonFields pf((*procs)[i], fmt::format("{}[{}]", f.Path("processes"), i));
      GpuProcess gp;
      gp.pid = static_cast<uint32_t>(pf.Int("pid", 0, UINT32_MAX));
      gp.name = pf.String("name", "");
      if (auto used = pf.OptionalInt("used_bytes", 0, kMaxMemory)) gp.used_bytes = *used;
      f.Merge(pf);
      g.processes.push_back(gp);
    }
  }
  if (const json* pcie = f.OptionalObject("pcie")) {
    JsonFields pf(*pcie, f.Path("pcie"));
    g.pcie_gen_current = static_cast<int>(pf.Int("gen_current", 0, 64, 0));
    g.pcie_gen_max = static_cast<int>(pf.Int("gen_max", 0, 64, 0));
    g.pcie_width_current = static_cast<int>(pf.Int("width_current", 0, 64, 0));
    g.pcie_width_max = static_cast<int>(pf.Int("width_max", 0, 64, 0));
    g.pcie_bandwidth_gbps = pf.Number("bandwidth_gbps", 0, kMaxGbps, 0.0);
    f.Merge(pf);
  }
  g.memory_bus_width_bits = static_cast<int>(f.Int("memory_bus_width_bits", 0, 1 << 16, 0));
  g.memory_clock_max_mhz = static_cast<int>(f.Int("memory_clock_max_mhz", 0, 1 << 20, 0));
  g.peak_bandwidth_gbps = f.Number("peak_bandwidth_gbps", 0, kMaxGbps, 0.0);
  g.gtt_total_bytes = f.Int("gtt_total_bytes", 0, kMaxMemory, 0);
  g.gtt_used_bytes = f.Int("gtt_used_bytes", 0, kMaxMemory, 0);
  g.notes = f.Strings("notes");
  parent->Merge(f);
  return g;
}

json CpuToJson(const CpuTopology& c) {
  json threads = json::array();
  for (const auto& s : c.suggested_threads) {
    threads.push_back({{"threads", s.threads}, {"label", s.label}, {"reason", s.reason}});
  }
  return {{"model_name", c.model_name},
          {"vendor", c.vendor},
          {"sockets", c.sockets},
          {"physical_cores", c.physical_cores},
          {"online_cpus", c.online_cpus},
          {"possible_cpus", c.possible_cpus},
          {"logical_cpus", c.logical_cpus},
          {"allowed_cpus", FormatCpuList(c.allowed_cpus)},
          {"allowed_physical_cores", c.allowed_physical_cores},
          {"allowed_performance_cores", c.allowed_performance_cores},
          {"smt_threads_per_core", c.max_smt},
          {"hybrid", c.hybrid},
          {"performance_cores", c.performance_cores},
          {"efficiency_cores", c.efficiency_cores},
          {"core_kind_source", c.kind_source},
          {"l3_domains", c.l3_domains},
          {"llc_bytes", c.llc_bytes},
          {"cpu_quota", c.cpu_quota ? json(*c.cpu_quota) : json(nullptr)},
          {"llama_default_threads", c.llama_default_threads},
          {"llama_default_reason", c.llama_default_reason},
          {"suggested_threads", threads},
          {"notes", c.notes}};
}

CpuTopology CpuFromJson(const json& j, JsonFields* parent) {
  JsonFields f(j, "cpu");
  CpuTopology c;
  auto count = [&f](std::string_view key, int64_t fallback) {
    return static_cast<int>(f.Int(key, 0, kMaxCount, fallback));
  };
  c.model_name = f.String("model_name", "");
  c.vendor = f.String("vendor", "");
  c.sockets = count("sockets", 0);
  c.physical_cores = static_cast<int>(f.Int("physical_cores", 0, kMaxCount));
  c.online_cpus = count("online_cpus", 0);
  c.possible_cpus = count("possible_cpus", 0);
  c.logical_cpus = static_cast<int>(f.Int("logical_cpus", 0, kMaxCount));
  c.allowed_cpus = ParseCpuList(f.String("allowed_cpus", "")).value_or(std::vector<int>{});
  c.allowed_physical_cores = count("allowed_physical_cores", c.physical_cores);
  c.allowed_performance_cores = count("allowed_performance_cores", 0);
  c.max_smt = static_cast<int>(f.Int("smt_threads_per_core", 1, 64, 1));
  c.hybrid = f.Bool("hybrid", false);
  c.performance_cores = count("performance_cores", 0);
  c.efficiency_cores = count("efficiency_cores", 0);
  c.kind_source = f.String("core_kind_source", "");
  c.l3_domains = count("l3_domains", 0);
  c.llc_bytes = f.Int("llc_bytes", 0, kMaxMemory, 0);
  if (auto quota = f.OptionalNumber("cpu_quota", 0, kMaxCount)) c.cpu_quota = *quota;
  c.llama_default_threads = count("llama_default_threads", 0);
  c.llama_default_reason = f.String("llama_default_reason", "");
  if (const json* threads = f.Array("suggested_threads")) {
    for (size_t i = 0; i < threads->size() && f.ok(); ++i) {
      JsonFields sf((*threads)[i], fmt::format("cpu.suggested_threads[{}]", i));
      c.suggested_threads.push_back({static_cast<int>(sf.Int("threads", 1, kMaxCount)),
                                     sf.String("label", ""), sf.String("reason", "")});
      f.Merge(sf);
    }
  }
  c.notes = f.Strings("notes");
  parent->Merge(f);
  return c;
}

json MemoryToJson(const SystemMemory& m, const std::optional<BandwidthResult>& bw) {
  json out = {{"total_bytes", m.total_bytes},
              {"available_bytes", m.available_bytes},
              {"meminfo_available_bytes", m.meminfo_available_bytes},
              {"cached_bytes", m.cached_bytes},
              {"swap_total_bytes", m.swap_total_bytes},
              {"swap_free_bytes", m.swap_free_bytes},
              {"cgroup_limit_bytes", OptionalJson(m.cgroup_limit_bytes)},
              {"cgroup_usage_bytes", OptionalJson(m.cgroup_usage_bytes)},
              {"read_bandwidth_gbps", bw ? json(bw->read_gbps) : json(nullptr)},
              {"notes", m.notes}};
  if (bw) {
    out["read_bandwidth"] = {{"best_gbps", bw->read_gbps},
                             {"median_gbps", bw->median_gbps},
                             {"passes_gbps", bw->pass_gbps},
                             {"threads", bw->threads},
                             {"buffer_bytes", bw->buffer_bytes},
                             {"seconds", bw->seconds},
                             {"kernel", bw->kernel}};
  }
  return out;
}

void MemoryFromJson(const json& j, MachineProfile* p, JsonFields* parent) {
  JsonFields f(j, "memory");
  SystemMemory& m = p->memory;
  m.total_bytes = f.Int("total_bytes", 0, kMaxMemory);
  m.available_bytes = f.Int("available_bytes", 0, kMaxMemory);
  m.meminfo_available_bytes = f.Int("meminfo_available_bytes", 0, kMaxMemory, m.available_bytes);
  m.cached_bytes = f.Int("cached_bytes", 0, kMaxMemory, 0);
  m.swap_total_bytes = f.Int("swap_total_bytes", 0, kMaxMemory, 0);
  m.swap_free_bytes = f.Int("swap_free_bytes", 0, kMaxMemory, 0);
  m.cgroup_limit_bytes = f.OptionalInt("cgroup_limit_bytes", 0, kMaxMemory);
  m.cgroup_usage_bytes = f.OptionalInt("cgroup_usage_bytes", 0, kMaxMemory);
  m.notes = f.Strings("notes");
  if (auto read = f.OptionalNumber("read_bandwidth_gbps", 0, kMaxGbps)) {
    BandwidthResult bw;
    bw.read_gbps = *read;
    if (const json* b = f.OptionalObject("read_bandwidth")) {
      JsonFields bf(*b, "memory.read_bandwidth");
      bw.median_gbps = bf.Number("median_gbps", 0, kMaxGbps, 0.0);
      bw.pass_gbps = bf.Numbers("passes_gbps", 0, kMaxGbps);
      bw.threads = static_cast<int>(bf.Int("threads", 0, kMaxCount, 0));
      bw.buffer_bytes = bf.Int("buffer_bytes", 0, kMaxMemory, 0);
      bw.seconds = bf.Number("seconds", 0, 1e6, 0.0);
      bw.kernel = bf.String("kernel", "");
      f.Merge(bf);
    }
    p->bandwidth = bw;
  }
  parent->Merge(f);
}

}  // namespace

json MachineProfileToJson(const MachineProfile& p) {
  json gpus = json::array();
  for (const auto& g : p.gpus) gpus.push_back(GpuToJson(g));
  return {{"schema_version", p.schema_version},
          {"created_at", p.created_at},
          {"hostname", p.hostname},
          {"moetune_version", p.moetune_version},
          {"gpus", gpus},
          {"nvidia_driver_version", p.nvidia_driver_version},
          {"gpu_notes", p.gpu_notes},
          {"cpu", CpuToJson(p.cpu)},
          {"memory", MemoryToJson(p.memory, p.bandwidth)},
          {"notes", p.notes}};
}

Result<MachineProfile> MachineProfileFromJson(const json& j) {
  MachineProfile p;
  JsonFields f(j, "");
  p.schema_version = static_cast<int>(f.Int("schema_version", 0, 1 << 20));
  if (f.ok() && p.schema_version != 1) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("machine profile schema_version {} is not 1; run `moetune doctor` to "
                             "write a new one",
                             p.schema_version));
  }
  p.created_at = f.String("created_at", "");
  p.hostname = f.String("hostname", "");
  p.moetune_version = f.String("moetune_version", "");
  if (const json* gpus = f.Array("gpus")) {
    for (size_t i = 0; i < gpus->size() && f.ok(); ++i)
      p.gpus.push_back(GpuFromJson((*gpus)[i], fmt::format("gpus[{}]", i), &f));
  }
  p.nvidia_driver_version = f.String("nvidia_driver_version", "");
  p.gpu_notes = f.Strings("gpu_notes");
  if (const json* cpu = f.Object("cpu")) p.cpu = CpuFromJson(*cpu, &f);
  if (const json* memory = f.Object("memory")) MemoryFromJson(*memory, &p, &f);
  p.notes = f.Strings("notes");
  if (const json* calibration = f.OptionalObject("calibration")) p.calibration = *calibration;
  if (!f.ok()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("not a moetune machine profile: {}; run `moetune doctor` to write a "
                             "new one (or correct that field)",
                             f.error().message()));
  }
  return p;
}

std::string DefaultMachineProfilePath() {
  if (const char* p = std::getenv("MOETUNE_PROFILE"); p != nullptr && *p != '\0') return p;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/moetune/machine.json";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.config/moetune/machine.json";
  }
  return "";
}

Result<MachineProfile> LoadMachineProfile(const std::string& path) {
  // A profile is a few KiB; 16 MiB bounds a wrong path (/dev/zero, a model file).
  constexpr std::size_t kMaxBytes = std::size_t{16} << 20;
  auto text = ReadRegularFile(path, kMaxBytes);
  if (!text.ok()) {
    if (text.error().kind() == ErrorKind::kNotFound) {
      return Error(
          ErrorKind::kNotFound,
          fmt::format("no machine profile at '{}'; run `moetune doctor` to create it", path));
    }
    return text.take_error().Context("machine profile");
  }
  MOETUNE_TRY(NoteInputFile(path, kProfileInput));
  auto parsed = ParseJson(*text, fmt::format("machine profile '{}'", path));
  if (!parsed.ok()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}; run `moetune doctor` to rewrite it", parsed.error().message()));
  }
  json j = std::move(parsed).value();
  auto p = MachineProfileFromJson(j);
  if (!p.ok()) return p.take_error().Context(fmt::format("machine profile '{}'", path));
  return p;
}

Status SaveMachineProfile(const MachineProfile& profile, const std::string& path) {
  if (path.empty()) {
    return Error(ErrorKind::kInvalidArgument,
                 "no path for the machine profile: set HOME, XDG_CONFIG_HOME or MOETUNE_PROFILE, "
                 "or pass --profile PATH");
  }
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Error(ErrorKind::kIo,
                 fmt::format("cannot create folder '{}' for the machine profile: {}", dir.string(),
                             ec.message()));
  }
  json j = MachineProfileToJson(profile);
  if (!profile.calibration.is_null()) j["calibration"] = profile.calibration;
  // Names from drivers and /proc may be any bytes: DumpJson never throws on them.
  // WriteFileSafely: atomic, no temporary left behind (signals included).
  // Calibrate reads the profile and writes it back: that input may be replaced.
  OutputFileOptions options;
  options.role = "--profile";
  options.may_replace = kProfileInput;
  auto st = WriteFileSafely(path, DumpJson(j, 2) + "\n", options);
  if (!st.ok()) return st.take_error().Context("machine profile");
  return OkStatus();
}

}  // namespace moetune
