#include "report/emit.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "config/server_argv.h"

namespace moetune {
namespace {

constexpr const char* kImageCpu = "ghcr.io/ggml-org/llama.cpp:server";
constexpr const char* kImageCuda = "ghcr.io/ggml-org/llama.cpp:server-cuda";
constexpr const char* kContainerModels = "/models";
// The server images set LLAMA_ARG_HOST=0.0.0.0 and check health on port 8080
// (.devops/cuda.Dockerfile, target "server"); llama-server's own default port differs.
constexpr const char* kContainerPort = "8080";

using Setting = FlagSetting;

std::string Comments(const std::vector<std::string>& lines, std::string_view mark) {
  std::string out;
  for (const auto& l : lines) {
    // One comment line per line of text: a newline in a header never starts live content.
    std::string_view rest = l;
    while (true) {
      const auto nl = rest.find('\n');
      out += std::string(mark) + " " + std::string(rest.substr(0, nl)) + "\n";
      if (nl == std::string_view::npos) break;
      rest = rest.substr(nl + 1);
    }
  }
  return out;
}

std::string ModelValue(const std::vector<Setting>& settings) {
  for (const auto& s : settings) {
    if (s.flag == FlagId::kModel) return s.value;
  }
  return "";
}

std::string PresetName(const EmitContext& ctx, const std::vector<Setting>& settings) {
  std::string name = ctx.preset_name;
  if (name.empty()) {
    name = std::filesystem::path(ModelValue(settings)).filename().string();
    if (name.size() > 5 && name.substr(name.size() - 5) == ".gguf") name.resize(name.size() - 5);
  }
  if (name.empty()) name = "moetune";
  for (char& c : name) {
    // Section names end at ']' and a line; keep them to one plain line.
    if (c == ']' || c == '[' || c == '\n' || c == '\r' || c == ';' || c == '#') c = '-';
  }
  return name;
}

// A YAML single-quoted scalar: quotes doubled; '$' doubled because compose
// interpolates ${VAR} and $VAR in every value.
std::string YamlQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "''";
    } else if (c == '$') {
      out += "$$";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Status NoLineBreaks(std::string_view flag, std::string_view value, const char* format) {
  if (value.find_first_of("\n\r") != std::string_view::npos) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} value of {} holds a line break, which a {} file cannot carry",
                             flag, value, format));
  }
  return OkStatus();
}

// The value a setting takes in a NAME=value or key = value file.
std::string FileValue(const Setting& s) {
  return Flag(s.flag).takes_value() ? s.value : kSwitchOnValue;
}

Result<std::string> Server(const std::string& program, const std::vector<Setting>& settings,
                           const EmitContext& ctx) {
  std::string out = Comments(ctx.header, "#");
  out += ShellQuoteWord(program);
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    out += " \\\n  " + ShellQuoteWord(f.spelling);
    if (f.takes_value()) out += " " + ShellQuoteWord(s.value);
  }
  return out + "\n";
}

Result<std::string> Env(const std::vector<Setting>& settings, const EmitContext& ctx) {
  std::string out = Comments(ctx.header, "#");
  out += "# Load into a shell, then start the server without flags:\n";
  out += "#   set -a; . ./llama-server.env; set +a; llama-server\n";
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    if (f.env == nullptr) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} has no LLAMA_ARG_* environment variable in llama.cpp; use "
                               "--emit server or ini for this configuration",
                               f.spelling));
    }
    MOETUNE_TRY(NoLineBreaks(f.spelling, s.value, "environment"));
    out += fmt::format("{}={}\n", f.env, ShellQuoteWord(FileValue(s)));
  }
  return out;
}

Result<std::string> Ini(const std::vector<Setting>& settings, const EmitContext& ctx) {
  const std::string name = PresetName(ctx, settings);
  std::string out = Comments(ctx.header, ";");
  out += Comments(
      {"A model preset for llama-server's router mode: llama-server --models-preset "
       "THIS_FILE.ini,",
       "then ask for the model \"" + name + "\". Presets exist in llama.cpp since December 2025",
       "(upstream PR #17859); Debian's llama.cpp 0.7.0 has them."},
      ";");
  out += "version = 1\n\n[" + name + "]\n";
  for (const auto& s : settings) {
    const std::string v = FileValue(s);
    // llama.cpp's preset reader (common/preset.cpp parse_ini_from_file) ends a
    // value at ';' or '#' and trims the blanks around it; there is no quoting.
    if (v.empty() || v.find_first_of(";#\n\r") != std::string::npos || v.front() == ' ' ||
        v.front() == '\t' || v.back() == ' ' || v.back() == '\t') {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} value '{}' cannot be written in a llama.cpp preset file (no "
                               "';', '#', line breaks or blanks at either end); use --emit server "
                               "or env",
                               Flag(s.flag).spelling, v));
    }
    out += PresetKey(Flag(s.flag)) + " = " + v + "\n";
  }
  return out;
}

Result<std::string> Compose(const ServerConfig& config, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto inner, ComposeServerArgv(config));
  const std::filesystem::path model = std::filesystem::absolute(config.model);
  const std::string host_dir = model.parent_path().string();
  MOETUNE_TRY(NoLineBreaks("-m", host_dir, "compose"));
  const std::string port = config.port > 0 ? std::to_string(config.port) : kContainerPort;
  std::string out = Comments(ctx.header, "#");
  out += "# docker compose up -d; the server answers on http://localhost:" + port + "\n";
  out += "services:\n  llama-server:\n";
  out += fmt::format("    image: {}\n", ctx.gpu ? kImageCuda : kImageCpu);
  out += fmt::format("    ports:\n      - {}\n", YamlQuote(port + ":" + port));
  out += "    volumes:\n      - type: bind\n";
  out += "        source: " + YamlQuote(host_dir) + "\n";
  out += std::string("        target: ") + kContainerModels + "\n        read_only: true\n";
  out += "    command:\n";
  for (size_t i = 1; i < inner.size(); ++i) {
    MOETUNE_TRY(NoLineBreaks(inner[i], inner[i], "compose"));
    out += "      - " + YamlQuote(inner[i]) + "\n";
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

Result<EmitFormat> ParseEmitFormat(std::string_view name) {
  if (name == "server") return EmitFormat::kServer;
  if (name == "env") return EmitFormat::kEnv;
  if (name == "ini") return EmitFormat::kIni;
  if (name == "compose") return EmitFormat::kCompose;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("--emit '{}': use server (the command line), env (LLAMA_ARG_* "
                           "variables), ini (a llama-server preset) or compose (docker compose)",
                           name));
}

const char* EmitFormatName(EmitFormat format) {
  switch (format) {
    case EmitFormat::kServer:
      return "server";
    case EmitFormat::kEnv:
      return "env";
    case EmitFormat::kIni:
      return "ini";
    case EmitFormat::kCompose:
      return "compose";
  }
  return "server";
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

Result<std::string> EmitServerConfig(EmitFormat format, const ServerConfig& config,
                                     const EmitContext& context) {
  const std::vector<Setting> settings = ConfigSettings(config);
  switch (format) {
    case EmitFormat::kServer:
      return Server("llama-server", settings, context);
    case EmitFormat::kEnv:
      return Env(settings, context);
    case EmitFormat::kIni:
      return Ini(settings, context);
    case EmitFormat::kCompose:
      return Compose(config, context);
  }
  return Server("llama-server", settings, context);
}

std::string ShellQuoteWord(std::string_view word) { return ShellJoin({std::string(word)}); }

}  // namespace moetune
