#include "emulated_link.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "engine/rpc_host.h"

namespace moetune::itest {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNetnsPrefix = "moetune-link-";
constexpr int kServerPort = 50052;  // ggml-rpc-server's default; the namespace is the server's own

// `ip` and `tc` from PATH, or from the sbin folders a non-login root shell may lack in PATH.
std::string FindTool(const std::string& name) {
  if (auto found = ResolveProgram(name); found.ok()) return *found;
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string JoinArgs(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs `ip`/`tc` quietly; the failure's message when it fails ("" when it worked).
std::string RunTool(const std::string& tool, const std::vector<std::string>& args) {
  const std::string exe = FindTool(tool);
  if (exe.empty()) {
    return fmt::format("`{}` not found (PATH, /usr/sbin, /sbin): install iproute2", tool);
  }
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv, 30);
  if (r.exit_code == 0) return "";
  return fmt::format("`{} {}` failed ({}): {}", tool, JoinArgs(args),
                     r.timed_out ? "timed out" : "exit " + std::to_string(r.exit_code), r.err);
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// Namespaces of earlier runs whose process is gone (killed before its
// destructors ran): their processes are killed and the namespaces deleted,
// which deletes their veth pairs too.
void RemoveStaleNamespaces() {
  for (const std::string& ns : EmulatedLinkNamespaces()) {
    const std::string rest = ns.substr(std::string(kNetnsPrefix).size());
    const pid_t owner = static_cast<pid_t>(std::atol(rest.c_str()));
    if (owner <= 0 || owner == ::getpid() || ProcessExists(owner)) continue;
    std::istringstream pids(NetToolOutput("ip", {"netns", "pids", ns}));
    for (pid_t p = 0; pids >> p;) ::kill(p, SIGKILL);
    (void)RunTool("ip", {"netns", "del", ns});
  }
}

// The address `offset` (1 or 2) of the index-th /30 of 198.18.0.0/15.
std::string BlockAddress(uint32_t index, uint32_t offset) {
  const uint32_t a = (198u << 24) | (18u << 16) | ((index % 32768u) * 4u + offset);
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 255u, (a >> 8) & 255u, a & 255u);
}

// A /30 of 198.18.0.0/15 that no interface here has an address in; its index.
int FreeBlock(uint32_t start) {
  for (uint32_t i = 0; i < 64; ++i) {
    const std::string net = BlockAddress(start + i, 0) + "/30";
    if (NetToolOutput("ip", {"-o", "-4", "addr", "show", "to", net}).empty()) {
      return static_cast<int>((start + i) % 32768u);
    }
  }
  return -1;
}

std::string RateArg(double rate_gbit) {
  return fmt::format("{}bit", std::llround(rate_gbit * 1e9));
}

}  // namespace

// tbf lets a full bucket of `burst` bytes through at the veth's own speed
// after an idle moment, where a real NIC would serialize every byte at line
// rate, so the bucket should be small: a transfer that starts from idle gains
// at most burst/rate. It cannot be tiny, though. (1) The stack hands the veth
// packets of up to 64 KiB (GSO); tbf splits every packet larger than its
// bucket in software, work the real link does not do. (2) tbf sends when its
// timer fires; a bucket of under about half a millisecond of the rate leaves
// 10 Gbit/s out of reach on a busy two-core machine (measured with one TCP
// stream here: a 64 KiB bucket gave 3.7 Gbit/s, 256 KiB 7.3, 1 MiB 8.0, the
// unshaped veth 9-10). So: half a millisecond of the rate, at least 64 KiB
// (0.52 ms at 1 Gbit/s, 625 kB at 10 Gbit/s).
int64_t TbfBurstBytes(double rate_gbit) {
  const double half_ms = rate_gbit * 1e9 / 8 * 0.5e-3;
  return std::max<int64_t>(int64_t{64} * 1024, std::llround(half_ms));
}

std::string NetToolOutput(const std::string& tool, const std::vector<std::string>& args) {
  const std::string exe = FindTool(tool);
  if (exe.empty()) return "";
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, 30).out;
}

std::vector<std::string> EmulatedLinkNamespaces() {
  std::vector<std::string> out;
  std::istringstream lines(NetToolOutput("ip", {"netns", "list"}));
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kNetnsPrefix, 0) == 0) out.push_back(name);
  }
  return out;
}

bool InterfaceExists(const std::string& name) {
  return RunTool("ip", {"link", "show", "dev", name}).empty();
}

EmulatedLink::EmulatedLink(const fs::path& engine_dir, double rate_gbit, int server_threads)
    : rate_gbit_(rate_gbit) {
  if (!Build(engine_dir, server_threads) && ::geteuid() != 0) {
    error_ +=
        "\nThe emulated links need root (network namespaces and veth pairs need CAP_SYS_ADMIN "
        "and CAP_NET_ADMIN): run the integration tests as root or with sudo";
  }
}

bool EmulatedLink::Tool(const std::string& tool, const std::vector<std::string>& args) {
  const std::string failed = RunTool(tool, args);
  if (failed.empty()) return true;
  error_ = failed;
  return false;
}

bool EmulatedLink::Build(const fs::path& engine_dir, int server_threads) {
  if (!fs::exists(engine_dir / "ggml-rpc-server")) {
    error_ = "no ggml-rpc-server in " + engine_dir.string() +
             ": the engine must include llama.cpp's RPC server (scripts/setup-engine.sh)";
    return false;
  }
  RemoveStaleNamespaces();
  static std::atomic<uint32_t> counter{0};
  const uint32_t n = counter++;
  const auto pid = static_cast<uint32_t>(::getpid());
  netns_ = fmt::format("{}{}-{}", kNetnsPrefix, pid, n);
  // Interface names have at most 15 characters: "mtl" + the pid in hex + the counter.
  host_if_ = fmt::format("mtl{:x}{}h", pid, n % 100);
  ns_if_ = fmt::format("mtl{:x}{}n", pid, n % 100);
  const int block = FreeBlock(pid * 16u + n);
  if (block < 0) {
    error_ = "no free /30 in 198.18.0.0/15 (every candidate is assigned on this machine)";
    return false;
  }
  host_addr_ = BlockAddress(static_cast<uint32_t>(block), 1);
  ns_addr_ = BlockAddress(static_cast<uint32_t>(block), 2);
  if (!Tool("ip", {"netns", "add", netns_})) return false;
  netns_made_ = true;
  if (!Tool("ip",
            {"link", "add", host_if_, "type", "veth", "peer", "name", ns_if_, "netns", netns_}) ||
      !Tool("ip", {"addr", "add", host_addr_ + "/30", "dev", host_if_}) ||
      !Tool("ip", {"link", "set", host_if_, "up"}) ||
      !Tool("ip", {"-n", netns_, "addr", "add", ns_addr_ + "/30", "dev", ns_if_}) ||
      !Tool("ip", {"-n", netns_, "link", "set", ns_if_, "up"}) ||
      !Tool("ip", {"-n", netns_, "link", "set", "lo", "up"})) {
    return false;
  }
  if (rate_gbit_ > 0) {
    burst_bytes_ = TbfBurstBytes(rate_gbit_);
    // The queue holds 50 ms of the rate: more than TCP ever queues on one
    // socket (TCP Small Queues), so no packet is dropped, as on a quiet switch.
    const std::vector<std::string> tbf = {
        "root",    "tbf", "rate", RateArg(rate_gbit_), "burst", std::to_string(burst_bytes_),
        "latency", "50ms"};
    std::vector<std::string> host = {"qdisc", "add", "dev", host_if_};
    std::vector<std::string> ns = {"-n", netns_, "qdisc", "add", "dev", ns_if_};
    host.insert(host.end(), tbf.begin(), tbf.end());
    ns.insert(ns.end(), tbf.begin(), tbf.end());
    if (!Tool("tc", host) || !Tool("tc", ns)) {
      error_ += " (the kernel needs the tbf queueing discipline: sch_tbf, CONFIG_NET_SCH_TBF)";
      return false;
    }
  }
  return StartServer(engine_dir, server_threads);
}

bool EmulatedLink::StartServer(const fs::path& engine_dir, int server_threads) {
  const std::string ip = FindTool("ip");
  const std::string endpoint = fmt::format("{}:{}", ns_addr_, kServerPort);
  server_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{ip, "netns", "exec", netns_,
                               (engine_dir / "ggml-rpc-server").string(), "-H", ns_addr_, "-p",
                               std::to_string(kServerPort), "-t", std::to_string(server_threads)},
      dir_.File("rpc.log"));
  // Ready when it answers the RPC hello through the link (what moetune checks too).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  RpcHostCheck check;
  while (server_->started() && server_->Running() && std::chrono::steady_clock::now() < until) {
    check = CheckRpcHost(endpoint, std::chrono::milliseconds(1000));
    if (check.ok()) {
      endpoint_ = endpoint;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error_ = fmt::format(
      "ggml-rpc-server in namespace {} did not answer on {} within 20 s ({}); "
      "its log:\n{}",
      netns_, endpoint, DescribeRpcHostProblem(check), ServerLog());
  server_.reset();
  return false;
}

EmulatedLink::~EmulatedLink() {
  server_.reset();  // kills and reaps its process group
  std::string failed;
  // Deleting one end of a veth pair deletes both; the namespace goes last.
  if (!host_if_.empty() && InterfaceExists(host_if_))
    failed += RunTool("ip", {"link", "del", host_if_});
  if (netns_made_) failed += RunTool("ip", {"netns", "del", netns_});
  if (!failed.empty()) ADD_FAILURE() << "emulated link " << netns_ << " not removed: " << failed;
}

std::string EmulatedLink::ServerLog() const {
  std::ifstream in(dir_.path() / "rpc.log", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace moetune::itest
