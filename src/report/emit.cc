#include "report/emit.h"

#include <fmt/format.h>

#include <filesystem>

#include "config/server_argv.h"
#include "engine/rpc_host.h"
#include "report/emit_launchers.h"
#include "report/emit_text.h"
#include "report/emit_windows.h"
#include "util/utf8.h"

namespace moetune {
namespace {

constexpr const char* kImageCpu = "ghcr.io/ggml-org/llama.cpp:server";
constexpr const char* kImageCuda = "ghcr.io/ggml-org/llama.cpp:server-cuda";
constexpr const char* kContainerModels = "/models";
// The server images set LLAMA_ARG_HOST=0.0.0.0 and check health on port 8080
// (.devops/cuda.Dockerfile, target "server"); llama-server's own default port differs.
constexpr const char* kContainerPort = "8080";

using Setting = FlagSetting;

struct FormatInfo {
  EmitFormat format;
  const char* name;
  const char* what;
};

constexpr FormatInfo kFormats[] = {
    {EmitFormat::kServer, "server", "the command line"},
    {EmitFormat::kEnv, "env", "LLAMA_ARG_* variables for a POSIX shell"},
    {EmitFormat::kIni, "ini", "a llama-server preset"},
    {EmitFormat::kCompose, "compose", "a docker compose service"},
    {EmitFormat::kLlamaSwap, "llama-swap", "a llama-swap model entry"},
    {EmitFormat::kPowerShell, "powershell", "the command as a PowerShell script"},
    {EmitFormat::kPowerShellEnv, "powershell-env", "LLAMA_ARG_* variables in PowerShell"},
    {EmitFormat::kCmd, "cmd", "the command as a cmd.exe batch file"},
    {EmitFormat::kCmdEnv, "cmd-env", "LLAMA_ARG_* variables in a batch file"},
    {EmitFormat::kOllama, "ollama", "an Ollama Modelfile, for what Ollama can express"},
};

// The value a setting takes in a NAME=value or key = value file.
std::string FileValue(const Setting& s) {
  return Flag(s.flag).takes_value() ? s.value : kSwitchOnValue;
}

Result<std::string> Server(const std::vector<Setting>& settings, const EmitContext& ctx) {
  // Single quotes carry every byte but NUL (refused before) in a POSIX shell,
  // line breaks and controls included: nothing inside them is live.
  std::string out = CommentBlock(ctx.header, "#");
  out += ShellQuoteWord("llama-server");
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    out += " \\\n  " + ShellQuoteWord(f.spelling);
    if (f.takes_value()) out += " " + ShellQuoteWord(s.value);
  }
  return out + "\n";
}

Result<std::string> Env(const ServerConfig& config, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto vars, LlamaEnvironment(config));
  std::string out = CommentBlock(ctx.header, "#");
  out += "# Load into a shell, then start the server without flags:\n";
  out += "#   set -a; . ./llama-server.env; set +a; llama-server\n";
  for (const auto& [name, value] : vars) {
    // A POSIX shell reads a line break inside single quotes as part of the
    // value, but line-based readers of NAME=value files (docker --env-file,
    // systemd EnvironmentFile) would start a new variable there.
    if (value.find_first_of("\n\r") != std::string::npos) {
      return CannotCarry(name, value, "holds a line break", "an environment file",
                         "server or powershell-env");
    }
    out += fmt::format("{}={}\n", name, ShellQuoteWord(value));
  }
  return out;
}

// llama.cpp's preset reader (common/preset.cpp parse_ini_from_file) has no
// quoting: a value ends at ';' or '#' and at the end of the line, and loses
// the blanks around it.
Status IniValue(const Setting& s, std::string_view v) {
  const char* flag = Flag(s.flag).spelling;
  const char* instead = "server, env or compose";
  if (v.empty() || v.front() == ' ' || v.front() == '\t' || v.back() == ' ' || v.back() == '\t')
    return CannotCarry(flag, v, "is empty or has blanks at either end", "a llama.cpp preset",
                       instead);
  if (v.find_first_of(";#") != std::string_view::npos)
    return CannotCarry(flag, v, "holds ';' or '#' (comments in a preset)", "a llama.cpp preset",
                       instead);
  for (size_t i = 0; i < v.size(); ++i) {
    const auto b = static_cast<unsigned char>(v[i]);
    // Controls and line breaks (U+0085 is C2 85, U+2028/U+2029 are E2 80 A8/A9):
    // the reader would end the line or keep a character an editor shows as one.
    const bool c1 = b == 0xC2 && i + 1 < v.size() && static_cast<unsigned char>(v[i + 1]) <= 0x9F;
    const bool sep = b == 0xE2 && v.substr(i + 1, 1) == "\x80" && i + 2 < v.size() &&
                     (v[i + 2] == '\xA8' || v[i + 2] == '\xA9');
    if (b < 0x20 || b == 0x7F || c1 || sep)
      return CannotCarry(flag, v, "holds a control character or line break", "a llama.cpp preset",
                         instead);
  }
  return OkStatus();
}

Result<std::string> Ini(const ServerConfig& config, const std::vector<Setting>& settings,
                        const EmitContext& ctx) {
  const std::string name = EntryName(ctx.preset_name, config.model);
  std::string out = CommentBlock(ctx.header, ";");
  out += CommentBlock(
      {"A model preset for llama-server's router mode: llama-server --models-preset "
       "THIS_FILE.ini,",
       "then ask for the model \"" + name + "\". Presets exist in llama.cpp since December 2025",
       "(upstream PR #17859); Debian's llama.cpp 0.7.0 has them."},
      ";");
  out += "version = 1\n\n[" + name + "]\n";
  for (const auto& s : settings) {
    const std::string v = FileValue(s);
    MOETUNE_TRY(IniValue(s, v));
    out += PresetKey(Flag(s.flag)) + " = " + v + "\n";
  }
  return out;
}

// A compose value: a YAML double-quoted scalar with '$' doubled, because
// compose interpolates ${VAR} and $VAR in every value.
Result<std::string> ComposeValue(std::string_view flag, std::string_view value) {
  std::string dollars;
  for (char c : value) dollars += c == '$' ? std::string("$$") : std::string(1, c);
  auto q = YamlQuoted(dollars);
  if (!q.ok()) return CannotCarry(flag, value, q.error().message(), "YAML", "server");
  return q;
}

Result<std::string> Compose(const ServerConfig& config, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto inner, ComposeServerArgv(config));
  const std::filesystem::path model = std::filesystem::absolute(config.model);
  MOETUNE_ASSIGN_OR_RETURN(const std::string host_dir,
                           ComposeValue("-m", model.parent_path().string()));
  const std::string port = config.port > 0 ? std::to_string(config.port) : kContainerPort;
  std::string out = CommentBlock(ctx.header, "#");
  out += "# docker compose up -d; the server answers on http://localhost:" + port + "\n";
  out += "services:\n  llama-server:\n";
  out += fmt::format("    image: {}\n", ctx.gpu ? kImageCuda : kImageCpu);
  out += fmt::format("    ports:\n      - \"{}:{}\"\n", port, port);
  out += "    volumes:\n      - type: bind\n";
  out += "        source: " + host_dir + "\n";
  out += std::string("        target: ") + kContainerModels + "\n        read_only: true\n";
  out += "    command:\n";
  for (size_t i = 1; i < inner.size(); ++i) {
    MOETUNE_ASSIGN_OR_RETURN(const std::string v, ComposeValue(inner[i], inner[i]));
    out += "      - " + v + "\n";
  }
  if (ctx.gpu) {
    out +=
        "    deploy:\n      resources:\n        reservations:\n          devices:\n"
        "            - driver: nvidia\n              count: all\n"
        "              capabilities: [gpu]\n";
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> RpcHostComments(const ServerConfig& config) {
  std::vector<std::string> lines;
  if (config.rpc.empty()) return lines;
  lines = {
      "RPC hosts: start llama.cpp's ggml-rpc-server on each of them before the server "
      "(the same",
      "llama.cpp version everywhere). The RPC backend has no authentication and no "
      "encryption:",
      "bind it to an address of a trusted private network, never a public one (see "
      "docs/distributed.md)."};
  for (const auto& endpoint : config.rpc) {
    MOETUNE_ASSIGN_OR_RETURN(const auto argv, RpcServerArgv(endpoint));
    lines.push_back(fmt::format("  on {}: {}", argv[2], ShellJoin(argv)));
  }
  return lines;
}

const std::vector<EmitFormat>& EmitFormats() {
  static const std::vector<EmitFormat> formats = [] {
    std::vector<EmitFormat> v;
    for (const auto& f : kFormats) v.push_back(f.format);
    return v;
  }();
  return formats;
}

std::string EmitFormatList() {
  std::string out;
  for (size_t i = 0; i < std::size(kFormats); ++i) {
    out += fmt::format("{}{} ({})", i == 0 ? "" : (i + 1 == std::size(kFormats) ? " or " : ", "),
                       kFormats[i].name, kFormats[i].what);
  }
  return out;
}

Result<EmitFormat> ParseEmitFormat(std::string_view name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("--emit '{}': use {}", ForTerminalField(name), EmitFormatList()));
}

const char* EmitFormatName(EmitFormat format) {
  for (const auto& f : kFormats) {
    if (f.format == format) return f.name;
  }
  return "server";
}

Result<std::vector<std::pair<std::string, std::string>>> LlamaEnvironment(
    const ServerConfig& config) {
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& s : ConfigSettings(config)) {
    const FlagSpec& f = Flag(s.flag);
    if (f.env == nullptr) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} has no LLAMA_ARG_* environment variable in llama.cpp; use "
                               "--emit server, ini or powershell for this configuration",
                               f.spelling));
    }
    vars.emplace_back(f.env, FileValue(s));
  }
  return vars;
}

Result<std::vector<std::string>> ComposeServerArgv(const ServerConfig& config) {
  if (config.model.empty()) {
    return Error(ErrorKind::kInvalidArgument,
                 "the command has no -m MODEL, so there is nothing to mount into the container");
  }
  ServerConfig inner = config;
  inner.model =
      std::string(kContainerModels) + "/" + std::filesystem::path(config.model).filename().string();
  if (inner.port <= 0) inner.port = std::stoi(kContainerPort);
  return ServerArgv(inner);
}

namespace {

Result<std::string> EmitWithContext(EmitFormat format, const ServerConfig& config,
                                    const std::vector<FlagSetting>& settings,
                                    const EmitContext& context) {
  switch (format) {
    case EmitFormat::kServer:
      return Server(settings, context);
    case EmitFormat::kEnv:
      return Env(config, context);
    case EmitFormat::kIni:
      return Ini(config, settings, context);
    case EmitFormat::kCompose:
      return Compose(config, context);
    case EmitFormat::kLlamaSwap:
      return EmitLlamaSwap(config, context);
    case EmitFormat::kPowerShell:
      return EmitPowerShell(settings, context);
    case EmitFormat::kPowerShellEnv:
      return EmitPowerShellEnv(config, context);
    case EmitFormat::kCmd:
      return EmitBatch(settings, context);
    case EmitFormat::kCmdEnv:
      return EmitBatchEnv(config, context);
    case EmitFormat::kOllama:
      return EmitOllama(config, context);
  }
  return Server(settings, context);
}

}  // namespace

Result<std::string> EmitServerConfig(EmitFormat format, const ServerConfig& config,
                                     const EmitContext& context) {
  const std::vector<Setting> settings = ConfigSettings(config);
  // A NUL byte ends a C string: no command line, environment or file name
  // holds one, so no format can carry it.
  for (const auto& s : settings) {
    if (s.value.find('\0') != std::string::npos) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} value '{}' holds a NUL byte, which no command line carries; "
                               "rename the file",
                               Flag(s.flag).spelling, ForTerminalField(s.value)));
    }
  }
  // Every format that starts the server says how to start its RPC hosts.
  EmitContext ctx = context;
  if (format != EmitFormat::kOllama) {
    MOETUNE_ASSIGN_OR_RETURN(const auto rpc, RpcHostComments(config));
    ctx.header.insert(ctx.header.end(), rpc.begin(), rpc.end());
  }
  return EmitWithContext(format, config, settings, ctx);
}

std::string ShellQuoteWord(std::string_view word) { return ShellJoin({std::string(word)}); }

}  // namespace moetune
