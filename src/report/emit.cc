#include "report/emit.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "plan/placement.h"

namespace moetune {
namespace {

constexpr const char* kImageCpu = "ghcr.io/ggml-org/llama.cpp:server";
constexpr const char* kImageCuda = "ghcr.io/ggml-org/llama.cpp:server-cuda";
constexpr const char* kContainerModels = "/models";
// The server images set LLAMA_ARG_HOST=0.0.0.0 and check health on port 8080
// (.devops/cuda.Dockerfile, target "server"); llama-server's own default port differs.
constexpr const char* kContainerPort = "8080";

// One flag of a canonical command with its value (empty for a switch).
struct Setting {
  const ServerFlag* flag;
  std::string value;
};

// The flags of `argv` (after argv[0]) in canonical order, repeated list
// values joined with commas.
Result<std::vector<Setting>> CanonicalSettings(const std::vector<std::string>& argv) {
  if (argv.empty()) return Error(ErrorKind::kInvalidArgument, "empty llama-server command");
  std::map<const ServerFlag*, std::string> values;
  for (size_t i = 1; i < argv.size(); ++i) {
    const ServerFlag* f = FindServerFlag(argv[i]);
    if (f == nullptr) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("llama-server argument '{}' is not one moetune can write as "
                               "configuration",
                               argv[i]));
    }
    if (!f->takes_value()) {
      values.emplace(f, "");  // a switch given twice means the same
      continue;
    }
    if (i + 1 >= argv.size()) {
      return Error(ErrorKind::kInvalidArgument, fmt::format("{} has no value", argv[i]));
    }
    const std::string& v = argv[++i];
    auto [it, inserted] = values.emplace(f, v);
    if (!inserted) {
      // llama.cpp takes only the last of a repeated flag (common/arg.cpp warns
      // "specified multiple times, use comma-separated values instead").
      if (f->arity != FlagArity::kList) {
        return Error(ErrorKind::kInvalidArgument,
                     fmt::format("{} is given twice ({} and {})", f->spelling, it->second, v));
      }
      it->second += "," + v;
    }
  }
  std::vector<Setting> out;
  for (const auto& f : KnownServerFlags()) {
    auto it = values.find(&f);
    if (it != values.end()) out.push_back({&f, it->second});
  }
  return out;
}

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
    if (std::string_view(s.flag->spelling) == "-m") return s.value;
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
std::string FileValue(const Setting& s) { return s.flag->takes_value() ? s.value : kSwitchOnValue; }

Result<std::string> Server(const std::string& program, const std::vector<Setting>& settings,
                           const EmitContext& ctx) {
  std::string out = Comments(ctx.header, "#");
  out += ShellQuoteWord(program);
  for (const auto& s : settings) {
    out += " \\\n  " + ShellQuoteWord(s.flag->spelling);
    if (s.flag->takes_value()) out += " " + ShellQuoteWord(s.value);
  }
  return out + "\n";
}

Result<std::string> Env(const std::vector<Setting>& settings, const EmitContext& ctx) {
  std::string out = Comments(ctx.header, "#");
  out += "# Load into a shell, then start the server without flags:\n";
  out += "#   set -a; . ./llama-server.env; set +a; llama-server\n";
  for (const auto& s : settings) {
    if (s.flag->env == nullptr) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} has no LLAMA_ARG_* environment variable in llama.cpp; use "
                               "--emit server or ini for this configuration",
                               s.flag->spelling));
    }
    MOETUNE_TRY(NoLineBreaks(s.flag->spelling, s.value, "environment"));
    out += fmt::format("{}={}\n", s.flag->env, ShellQuoteWord(FileValue(s)));
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
                               s.flag->spelling, v));
    }
    out += PresetKey(*s.flag) + " = " + v + "\n";
  }
  return out;
}

Result<std::string> Compose(const std::vector<std::string>& argv, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto inner, ComposeServerArgv(argv));
  MOETUNE_ASSIGN_OR_RETURN(auto settings, CanonicalSettings(argv));
  const std::filesystem::path model = std::filesystem::absolute(ModelValue(settings));
  const std::string host_dir = model.parent_path().string();
  MOETUNE_TRY(NoLineBreaks("-m", host_dir, "compose"));
  std::string port = kContainerPort;
  for (const auto& s : settings) {
    if (std::string_view(s.flag->spelling) == "--port") port = s.value;
  }
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

const std::vector<ServerFlag>& KnownServerFlags() {
  // Order: the order moetune's plan writes them (plan/launch.h MemoryShapingFlags).
  // Environment names: llama.cpp common/arg.cpp, set_env() of each option, as
  // listed by `llama-server --help` ("(env: LLAMA_ARG_...)").
  static const std::vector<ServerFlag> kFlags = {
      {"-m", "--model", "LLAMA_ARG_MODEL", FlagArity::kValue, {}},
      {"-ngl", "--n-gpu-layers", "LLAMA_ARG_N_GPU_LAYERS", FlagArity::kValue, {"--gpu-layers"}},
      {"--n-cpu-moe", "--n-cpu-moe", "LLAMA_ARG_N_CPU_MOE", FlagArity::kValue, {"-ncmoe"}},
      {"-ot", "--override-tensor", "LLAMA_ARG_OVERRIDE_TENSOR", FlagArity::kList, {}},
      {"-c", "--ctx-size", "LLAMA_ARG_CTX_SIZE", FlagArity::kValue, {}},
      {"-np", "--parallel", "LLAMA_ARG_N_PARALLEL", FlagArity::kValue, {}},
      // One KV cache shared by every slot; llama.cpp reads the preset key
      // `kv-unified = true` and LLAMA_ARG_KV_UNIFIED=true (checked with 0.7.0).
      {"-kvu", "--kv-unified", "LLAMA_ARG_KV_UNIFIED", FlagArity::kSwitch, {}},
      {"-ub", "--ubatch-size", "LLAMA_ARG_UBATCH", FlagArity::kValue, {}},
      {"-b", "--batch-size", "LLAMA_ARG_BATCH", FlagArity::kValue, {}},
      {"-fa", "--flash-attn", "LLAMA_ARG_FLASH_ATTN", FlagArity::kValue, {}},
      {"-ctk", "--cache-type-k", "LLAMA_ARG_CACHE_TYPE_K", FlagArity::kValue, {}},
      {"-ctv", "--cache-type-v", "LLAMA_ARG_CACHE_TYPE_V", FlagArity::kValue, {}},
      {"-t", "--threads", "LLAMA_ARG_THREADS", FlagArity::kValue, {}},
      // -tb has no environment variable (llama.cpp 0.7.0 and upstream).
      {"-tb", "--threads-batch", nullptr, FlagArity::kValue, {}},
      {"-fit", "--fit", "LLAMA_ARG_FIT", FlagArity::kValue, {}},
      {"-fitt", "--fit-target", "LLAMA_ARG_FIT_TARGET", FlagArity::kValue, {}},
      {"-lm", "--load-mode", "LLAMA_ARG_LOAD_MODE", FlagArity::kValue, {}},
      {"-sm", "--split-mode", "LLAMA_ARG_SPLIT_MODE", FlagArity::kValue, {}},
      {"-ts", "--tensor-split", "LLAMA_ARG_TENSOR_SPLIT", FlagArity::kValue, {}},
      {"-mg", "--main-gpu", "LLAMA_ARG_MAIN_GPU", FlagArity::kValue, {}},
      {"-dev", "--device", "LLAMA_ARG_DEVICE", FlagArity::kValue, {}},
      {"--host", "--host", "LLAMA_ARG_HOST", FlagArity::kValue, {}},
      {"--port", "--port", "LLAMA_ARG_PORT", FlagArity::kValue, {}},
  };
  return kFlags;
}

const ServerFlag* FindServerFlag(std::string_view arg) {
  for (const auto& f : KnownServerFlags()) {
    if (arg == f.spelling || arg == f.long_name) return &f;
    for (const char* a : f.aliases) {
      if (arg == a) return &f;
    }
  }
  return nullptr;
}

std::string PresetKey(const ServerFlag& flag) {
  std::string_view n = flag.long_name;
  while (!n.empty() && n.front() == '-') n.remove_prefix(1);
  return std::string(n);
}

Result<std::vector<std::string>> CanonicalServerArgv(const std::vector<std::string>& argv) {
  MOETUNE_ASSIGN_OR_RETURN(auto settings, CanonicalSettings(argv));
  std::vector<std::string> out = {argv[0]};
  for (const auto& s : settings) {
    out.push_back(s.flag->spelling);
    if (s.flag->takes_value()) out.push_back(s.value);
  }
  return out;
}

Result<std::vector<std::string>> ComposeServerArgv(const std::vector<std::string>& argv) {
  MOETUNE_ASSIGN_OR_RETURN(auto settings, CanonicalSettings(argv));
  bool model = false, port = false;
  std::vector<std::string> out = {argv[0]};
  for (const auto& s : settings) {
    const std::string_view flag = s.flag->spelling;
    out.push_back(s.flag->spelling);
    if (flag == "-m") {
      out.push_back(std::string(kContainerModels) + "/" +
                    std::filesystem::path(s.value).filename().string());
      model = true;
    } else if (s.flag->takes_value()) {
      out.push_back(s.value);
    }
    port |= flag == "--port";
  }
  if (!model) {
    return Error(ErrorKind::kInvalidArgument,
                 "the command has no -m MODEL, so there is nothing to mount into the container");
  }
  if (!port) out.insert(out.end(), {"--port", kContainerPort});
  return out;
}

Result<std::string> EmitServerConfig(EmitFormat format, const std::vector<std::string>& argv,
                                     const EmitContext& context) {
  MOETUNE_ASSIGN_OR_RETURN(auto settings, CanonicalSettings(argv));
  switch (format) {
    case EmitFormat::kServer:
      return Server(argv[0], settings, context);
    case EmitFormat::kEnv:
      return Env(settings, context);
    case EmitFormat::kIni:
      return Ini(settings, context);
    case EmitFormat::kCompose:
      return Compose(argv, context);
  }
  return Server(argv[0], settings, context);
}

std::string ShellQuoteWord(std::string_view word) { return ShellJoin({std::string(word)}); }

}  // namespace moetune
