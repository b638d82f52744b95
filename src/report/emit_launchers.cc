#include "report/emit_launchers.h"

#include <fmt/format.h>

#include "config/server_argv.h"
#include "gguf/ggml_type.h"
#include "report/emit_text.h"
#include "util/utf8.h"

namespace moetune {
namespace {

constexpr const char* kSwapPort = "${PORT}";

// A word of llama-swap's `cmd`. llama-swap (proxy/config/config.go,
// SanitizeCommand) drops lines starting with '#', joins lines ending in '\',
// and splits the rest with github.com/billziss-gh/golib/shlex: POSIX rules on
// Linux and macOS, Windows (CommandLineToArgvW) rules on Windows. Bare words
// and double-quoted words without '"' and without a backslash before \ " $ `
// or the closing quote read the same under both, so the entry works on every
// platform. Before splitting it replaces ${NAME} macros, with no escape, so a
// value with "${" is refused too.
Result<std::string> SwapWord(std::string_view flag, std::string_view value) {
  const char* problem = nullptr;
  if (value.find("${") != std::string_view::npos) {
    problem = "holds \"${\", which llama-swap reads as a macro";
  } else if (value.find_first_of("\n\"") != std::string_view::npos) {
    problem = "holds a line break or a double quote";
  } else if (value.empty() || value.back() == '\\') {
    problem = "is empty or ends with a backslash";
  } else {
    for (size_t i = 0; i + 1 < value.size(); ++i) {
      if (value[i] == '\\' && std::string_view("\\\"$`").find(value[i + 1]) != std::string::npos)
        problem = "has a backslash before \\, \", $ or `";
    }
  }
  if (problem != nullptr) {
    return CannotCarry(flag, value, problem, "llama-swap's cmd (POSIX and Windows splitting)",
                       "server or compose");
  }
  const bool plain = value.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                         "-_./=:,+@%") == std::string_view::npos;
  return plain ? std::string(value) : "\"" + std::string(value) + "\"";
}

Result<std::string> SwapYaml(std::string_view flag, std::string_view value) {
  auto q = YamlQuoted(value);
  if (!q.ok()) return CannotCarry(flag, value, q.error().message(), "YAML", "server");
  return q;
}

// Characters Ollama's Modelfile reader (parser/parser.go ParseFile) drops:
// it keeps a character only when Go's strconv.IsPrint says so (letters,
// marks, numbers, punctuation, symbols and the ASCII space). This is the part
// of that rule a file name can meet: controls, line and paragraph separators,
// other spaces and format characters.
bool OllamaDrops(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x061C || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
         (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF ||
         (cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xFFFE || cp == 0xFFFF;
}

// FROM "PATH": the reader takes a double-quoted value whole (blanks included)
// and has no escapes, so '"' cannot be written.
Result<std::string> OllamaFrom(std::string_view path) {
  const char* problem = nullptr;
  if (path.find('"') != std::string_view::npos) problem = "holds a double quote";
  for (size_t i = 0; problem == nullptr && i < path.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(path.substr(i), &cp);
    if (n == 0) {
      problem = "is not UTF-8";
    } else if (OllamaDrops(cp)) {
      problem = "holds a control, separator or format character";
    }
    i += n == 0 ? 1 : n;
  }
  if (problem != nullptr) return CannotCarry("-m", path, problem, "an Ollama Modelfile", "server");
  return "FROM \"" + std::string(path) + "\"\n";
}

// Any expert placement: --n-cpu-moe, --cpu-moe or -ot rules.
bool ExpertsPlaced(const Placement& p) {
  return p.all_cpu_moe || p.WrittenNCpuMoe() > 0 || !p.Rules().empty();
}

// What this configuration says that a Modelfile cannot, one comment line each.
std::vector<std::string> OllamaCannot(const ServerConfig& c) {
  std::vector<std::string> out;
  const Placement& p = c.placement;
  if (ExpertsPlaced(p)) {
    out.push_back(
        "The expert placement (" + ShellJoin(SettingsArgv(PlacementSettings(p))) +
        ") cannot be written for Ollama: it offloads whole layers, so num_gpu is left to it.");
  }
  if (!p.devices.empty() || !c.rpc.empty())
    out.push_back("The device split (-dev, -ts, --rpc) cannot be written for Ollama.");
  if (c.flash_attn != FlashAttn::kDefault)
    out.push_back(fmt::format("-fa {}: set OLLAMA_FLASH_ATTENTION={} on the Ollama server.",
                              FlashAttnName(c.flash_attn), c.flash_attn == FlashAttn::kOn ? 1 : 0));
  if (c.type_k != ggml_type::kF16 || c.type_v != ggml_type::kF16)
    out.push_back(fmt::format(
        "KV cache -ctk {} -ctv {}: set OLLAMA_KV_CACHE_TYPE on the Ollama server (one type for "
        "both; it needs flash attention).",
        GgmlTypeName(c.type_k), GgmlTypeName(c.type_v)));
  if (c.n_parallel > 0)
    out.push_back(fmt::format("-np {}: set OLLAMA_NUM_PARALLEL={} on the Ollama server.",
                              c.n_parallel, c.n_parallel));
  if (c.kv_unified != Switch::kDefault || c.n_ubatch != 512 || c.fit != Switch::kDefault ||
      c.load_mode != LoadMode::kDefault)
    out.push_back("-kvu, -ub, -fit and -lm have no Ollama setting.");
  if (!out.empty())
    out.push_back("For all of it, run llama-server itself: moetune ... --emit server.");
  return out;
}

}  // namespace

Result<std::string> EmitLlamaSwap(const ServerConfig& config, const EmitContext& ctx) {
  // llama-swap starts the server on a port of its own (${PORT}, from
  // startPort) and proxies to it; the server listens on 127.0.0.1 (its default).
  ServerConfig inner = config;
  inner.host.clear();
  inner.port = 1;
  std::string cmd = "llama-server";
  for (const auto& s : ConfigSettings(inner)) {
    const FlagSpec& f = Flag(s.flag);
    cmd += " " + std::string(f.spelling);
    if (!f.takes_value()) continue;
    if (s.flag == FlagId::kPort) {
      cmd += std::string(" ") + kSwapPort;
      continue;
    }
    MOETUNE_ASSIGN_OR_RETURN(const std::string w, SwapWord(f.spelling, s.value));
    cmd += " " + w;
  }
  MOETUNE_ASSIGN_OR_RETURN(const std::string cmd_yaml, SwapYaml("-m", cmd));
  MOETUNE_ASSIGN_OR_RETURN(const std::string name,
                           SwapYaml("-m", EntryName(ctx.preset_name, config.model)));
  // The format: llama-swap's config.example.yaml (models.ID.cmd, proxy;
  // the ${PORT} macro) and proxy/config/config.go LoadConfigFromReader.
  std::string out = CommentBlock(ctx.header, "#");
  out += "# A llama-swap model entry (github.com/mostlygeek/llama-swap): put it under the\n";
  out += "# models: of your config.yaml; llama-swap starts it on ${PORT} when asked for it.\n";
  out += "models:\n  " + name + ":\n";
  out += "    cmd: " + cmd_yaml + "\n";
  out += "    proxy: \"http://127.0.0.1:${PORT}\"\n";
  return out;
}

Result<std::string> EmitOllama(const ServerConfig& config, const EmitContext& ctx) {
  if (config.model.empty())
    return Error(ErrorKind::kInvalidArgument, "the command has no -m MODEL for the FROM line");
  MOETUNE_ASSIGN_OR_RETURN(const std::string from, OllamaFrom(config.model));
  // The Modelfile reference (ollama docs/modelfile.md) and api.Options
  // (num_ctx, num_gpu: layers on the GPU, num_thread, num_batch).
  std::string out = CommentBlock(ctx.header, "#");
  out += "# An Ollama Modelfile: ollama create NAME -f THIS_FILE, then ollama run NAME.\n";
  out += from;
  if (config.ctx_size > 0) out += fmt::format("PARAMETER num_ctx {}\n", config.ctx_size);
  const Placement& p = config.placement;
  if (!ExpertsPlaced(p) && p.n_gpu_layers >= 0)
    out += fmt::format("PARAMETER num_gpu {}\n", p.n_gpu_layers);
  if (config.threads > 0) out += fmt::format("PARAMETER num_thread {}\n", config.threads);
  out += fmt::format("PARAMETER num_batch {}\n", config.n_batch);
  out += CommentBlock(OllamaCannot(config), "#");
  return out;
}

}  // namespace moetune
