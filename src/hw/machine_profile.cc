#include "hw/machine_profile.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/read_file.h"

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

GpuInfo GpuFromJson(const json& j) {
  GpuInfo g;
  g.index = j.at("index").get<int>();
  g.vendor = j.at("vendor").get<std::string>();
  g.name = j.at("name").get<std::string>();
  g.pci_bus_id = j.value("pci_bus_id", "");
  g.total_bytes = j.at("total_bytes").get<int64_t>();
  g.free_bytes = j.at("free_bytes").get<int64_t>();
  g.used_bytes = j.value("used_bytes", int64_t{0});
  g.reserved_bytes = j.value("reserved_bytes", int64_t{0});
  g.used_by_others_bytes = j.at("used_by_others_bytes").get<int64_t>();
  g.memory_query = j.value("memory_query", "");
  g.processes_known = j.value("processes_known", false);
  for (const auto& p : j.value("processes", json::array())) {
    GpuProcess gp;
    gp.pid = p.at("pid").get<uint32_t>();
    gp.name = p.value("name", "");
    if (p.contains("used_bytes") && !p["used_bytes"].is_null())
      gp.used_bytes = p["used_bytes"].get<int64_t>();
    g.processes.push_back(gp);
  }
  if (j.contains("pcie")) {
    const json& pc = j["pcie"];
    g.pcie_gen_current = pc.value("gen_current", 0);
    g.pcie_gen_max = pc.value("gen_max", 0);
    g.pcie_width_current = pc.value("width_current", 0);
    g.pcie_width_max = pc.value("width_max", 0);
    g.pcie_bandwidth_gbps = pc.value("bandwidth_gbps", 0.0);
  }
  g.memory_bus_width_bits = j.value("memory_bus_width_bits", 0);
  g.memory_clock_max_mhz = j.value("memory_clock_max_mhz", 0);
  g.peak_bandwidth_gbps = j.value("peak_bandwidth_gbps", 0.0);
  g.gtt_total_bytes = j.value("gtt_total_bytes", int64_t{0});
  g.gtt_used_bytes = j.value("gtt_used_bytes", int64_t{0});
  g.notes = j.value("notes", std::vector<std::string>{});
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

CpuTopology CpuFromJson(const json& j) {
  CpuTopology c;
  c.model_name = j.value("model_name", "");
  c.vendor = j.value("vendor", "");
  c.sockets = j.value("sockets", 0);
  c.physical_cores = j.at("physical_cores").get<int>();
  c.online_cpus = j.value("online_cpus", 0);
  c.possible_cpus = j.value("possible_cpus", 0);
  c.logical_cpus = j.at("logical_cpus").get<int>();
  c.allowed_cpus = ParseCpuList(j.value("allowed_cpus", "")).value_or(std::vector<int>{});
  c.allowed_physical_cores = j.value("allowed_physical_cores", c.physical_cores);
  c.allowed_performance_cores = j.value("allowed_performance_cores", 0);
  c.max_smt = j.value("smt_threads_per_core", 1);
  c.hybrid = j.value("hybrid", false);
  c.performance_cores = j.value("performance_cores", 0);
  c.efficiency_cores = j.value("efficiency_cores", 0);
  c.kind_source = j.value("core_kind_source", "");
  c.l3_domains = j.value("l3_domains", 0);
  c.llc_bytes = j.value("llc_bytes", int64_t{0});
  if (j.contains("cpu_quota") && !j["cpu_quota"].is_null())
    c.cpu_quota = j["cpu_quota"].get<double>();
  c.llama_default_threads = j.value("llama_default_threads", 0);
  c.llama_default_reason = j.value("llama_default_reason", "");
  for (const auto& s : j.at("suggested_threads")) {
    c.suggested_threads.push_back(
        {s.at("threads").get<int>(), s.value("label", ""), s.value("reason", "")});
  }
  c.notes = j.value("notes", std::vector<std::string>{});
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

void MemoryFromJson(const json& j, MachineProfile* p) {
  SystemMemory& m = p->memory;
  m.total_bytes = j.at("total_bytes").get<int64_t>();
  m.available_bytes = j.at("available_bytes").get<int64_t>();
  m.meminfo_available_bytes = j.value("meminfo_available_bytes", m.available_bytes);
  m.cached_bytes = j.value("cached_bytes", int64_t{0});
  m.swap_total_bytes = j.value("swap_total_bytes", int64_t{0});
  m.swap_free_bytes = j.value("swap_free_bytes", int64_t{0});
  if (j.contains("cgroup_limit_bytes") && !j["cgroup_limit_bytes"].is_null()) {
    m.cgroup_limit_bytes = j["cgroup_limit_bytes"].get<int64_t>();
  }
  if (j.contains("cgroup_usage_bytes") && !j["cgroup_usage_bytes"].is_null()) {
    m.cgroup_usage_bytes = j["cgroup_usage_bytes"].get<int64_t>();
  }
  m.notes = j.value("notes", std::vector<std::string>{});
  if (j.contains("read_bandwidth_gbps") && !j["read_bandwidth_gbps"].is_null()) {
    BandwidthResult bw;
    bw.read_gbps = j["read_bandwidth_gbps"].get<double>();
    if (j.contains("read_bandwidth")) {
      const json& b = j["read_bandwidth"];
      bw.median_gbps = b.value("median_gbps", 0.0);
      bw.pass_gbps = b.value("passes_gbps", std::vector<double>{});
      bw.threads = b.value("threads", 0);
      bw.buffer_bytes = b.value("buffer_bytes", int64_t{0});
      bw.seconds = b.value("seconds", 0.0);
      bw.kernel = b.value("kernel", std::string());
    }
    p->bandwidth = bw;
  }
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
  try {
    p.schema_version = j.at("schema_version").get<int>();
    if (p.schema_version != 1) {
      return Error(
          ErrorKind::kUnsupported,
          fmt::format("machine profile schema_version {} is not 1; run `moetune doctor` to "
                      "write a new one",
                      p.schema_version));
    }
    p.created_at = j.value("created_at", "");
    p.hostname = j.value("hostname", "");
    p.moetune_version = j.value("moetune_version", "");
    for (const auto& g : j.at("gpus")) p.gpus.push_back(GpuFromJson(g));
    p.nvidia_driver_version = j.value("nvidia_driver_version", "");
    p.gpu_notes = j.value("gpu_notes", std::vector<std::string>{});
    p.cpu = CpuFromJson(j.at("cpu"));
    MemoryFromJson(j.at("memory"), &p);
    p.notes = j.value("notes", std::vector<std::string>{});
    if (j.contains("calibration")) p.calibration = j["calibration"];
  } catch (const json::exception& e) {
    return Error(ErrorKind::kFormat, fmt::format("not a moetune machine profile ({}); run `moetune "
                                                 "doctor` to write a new one",
                                                 e.what()));
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
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Error(ErrorKind::kFormat, fmt::format("machine profile '{}' is not valid JSON; run "
                                                 "`moetune doctor` to rewrite it",
                                                 path));
  }
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
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    json j = MachineProfileToJson(profile);
    if (!profile.calibration.is_null()) j["calibration"] = profile.calibration;
    f << j.dump(2) << "\n";
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return Error(ErrorKind::kIo, fmt::format("cannot write machine profile '{}'", tmp));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Error(ErrorKind::kIo, fmt::format("cannot move machine profile into '{}'", path));
  }
  return OkStatus();
}

}  // namespace moetune
