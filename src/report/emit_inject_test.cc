// Configuration injection (every --emit format): every line break (\n \r \v
// \f U+0085 U+2028 U+2029), every C0 control, DEL and every C1 control, in the
// model path and in a header line, goes through every format, which is read
// back by a real parser where this machine has one (PyYAML for compose and
// llama-swap, /bin/sh for server and env) or else by a reference reader
// written here from the tool's documented rules (ini: llama.cpp's preset
// reader; PowerShell; cmd.exe; Ollama's Modelfile reader: these are not the
// real tools). Each output either has exactly the expected keys and gives the
// value back byte for byte, or is refused with a message that names the value.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/server_argv.h"
#include "report/emit.h"
#include "report/emit_test_util.h"
#include "util/temp_dir_test_util.h"
#include "util/text.h"

namespace moetune {
namespace {

using testing::ArgvFromComposeDoc;
using testing::ArgvFromIni;
using testing::ReadText;
using testing::RunTool;
using testing::WriteText;

// Every character under test, as UTF-8.
std::vector<std::string> Characters() {
  std::vector<std::string> out;
  for (int c = 1; c < 0x20; ++c) out.emplace_back(1, static_cast<char>(c));
  out.emplace_back("\x7f");
  for (int c = 0x80; c <= 0x9F; ++c) {
    out.push_back(std::string("\xC2") + static_cast<char>(c));  // U+0080..U+009F
  }
  out.emplace_back("\xE2\x80\xA8");  // U+2028
  out.emplace_back("\xE2\x80\xA9");  // U+2029
  return out;
}

ServerConfig Config(const std::string& c) {
  ServerConfig config;
  config.model = "/models/a" + c + "include: [x]" + c + "LLAMA_ARG_PORT=1" + c + "#.gguf";
  config.placement.n_cpu_moe = 4;
  config.ctx_size = 8192;
  config.threads = 6;
  config.fit = Switch::kOff;
  return config;
}

EmitContext Header(const std::string& c) {
  EmitContext ctx;
  ctx.header = {"machine x" + c + "include: [evil]" + c + "$env:EVIL = 1" + c +
                "set \"LLAMA_ARG_PORT=1\"" + c + "PARAMETER num_gpu 0"};
  return ctx;
}

// One --emit output, and what the real parsers read in it. Those fields are
// filled for all cases at once (ReadBack): starting python3 or /bin/sh costs
// far more than the reading, and there are hundreds of cases.
struct Case {
  std::string trace;
  EmitFormat format;
  ServerConfig config;
  std::string text;
  nlohmann::json yaml;  // compose, llama-swap: the text as PyYAML reads it
  std::string shell;    // server: the arguments llama-server got; env: `env -0`
};

// One /bin/sh reads every server and env case, each in its own subshell and
// with its own output file (every byte comes back, no delimiter to escape): a
// server text runs with a `llama-server` first on PATH that prints its
// arguments NUL-terminated; an env text is sourced under `set -a`, then the
// environment is printed. A case the shell fails is a test failure.
void RunShell(std::vector<Case>* cases) {
  testing::TempDir dir;
  std::string script =
      "d=$1\n"
      "mkdir -p \"$d/bin\" && printf '#!/bin/sh\\nprintf \"%%s\\\\0\" llama-server \"$@\"\\n' "
      "> \"$d/bin/llama-server\" && chmod +x \"$d/bin/llama-server\" || exit 1\n";
  for (size_t i = 0; i < cases->size(); ++i) {
    const EmitFormat f = (*cases)[i].format;
    if (f != EmitFormat::kServer && f != EmitFormat::kEnv) continue;
    WriteText(dir.File(fmt::format("{}.sh", i)), (*cases)[i].text);
    script += f == EmitFormat::kServer
                  ? fmt::format("(PATH=\"$d/bin:$PATH\"; . \"$d/{0}.sh\")", i)
                  : fmt::format("(set -a; . \"$d/{0}.sh\"; set +a; env -0)", i);
    script += fmt::format(" >\"$d/{0}.out\" </dev/null; echo $? >\"$d/{0}.rc\"\n", i);
  }
  WriteText(dir.File("all.sh"), script);
  RunTool({"/bin/sh", dir.File("all.sh"), dir.path()});
  for (size_t i = 0; i < cases->size(); ++i) {
    Case& k = (*cases)[i];
    if (k.format != EmitFormat::kServer && k.format != EmitFormat::kEnv) continue;
    EXPECT_EQ(ReadText(dir.File(fmt::format("{}.rc", i))), "0\n") << k.trace << ":\n" << k.text;
    k.shell = ReadText(dir.File(fmt::format("{}.out", i)));
  }
}

// The NUL-terminated strings in `out`.
std::vector<std::string> NulTerminated(const std::string& out) {
  std::vector<std::string> words;
  for (size_t start = 0, end; (end = out.find('\0', start)) != std::string::npos; start = end + 1)
    words.push_back(out.substr(start, end - start));
  return words;
}

// The LLAMA_ARG_* variables of an `env -0` listing.
std::map<std::string, std::string> LlamaVariables(const std::string& out) {
  std::map<std::string, std::string> vars;
  for (const std::string& kv : NulTerminated(out)) {
    if (kv.rfind("LLAMA_ARG_", 0) == 0)
      vars[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  return vars;
}

// PyYAML (one python3 run) reads every compose and llama-swap case, /bin/sh
// (one run) every server and env case.
void ReadBack(std::vector<Case>* cases) {
  std::vector<std::string> documents;
  std::vector<size_t> at;
  for (size_t i = 0; i < cases->size(); ++i) {
    const EmitFormat f = (*cases)[i].format;
    if (f == EmitFormat::kCompose || f == EmitFormat::kLlamaSwap) {
      documents.push_back((*cases)[i].text);
      at.push_back(i);
    }
  }
  const std::vector<nlohmann::json> docs = testing::YamlLoadAll(documents);
  for (size_t j = 0; j < at.size(); ++j) (*cases)[at[j]].yaml = docs[j];
  RunShell(cases);
}

std::map<std::string, std::string> Expected(const ServerConfig& config) {
  auto vars = LlamaEnvironment(config);
  EXPECT_TRUE(vars.ok());
  std::map<std::string, std::string> out;
  if (vars.ok()) out.insert(vars->begin(), vars->end());
  return out;
}

// llama-swap's cmd split by the POSIX rules of its splitter
// (github.com/billziss-gh/golib shlex.Posix): blanks \t ' ' \n separate;
// '...' literal; "..." with \ escaping \ " $ `; \ outside quotes escapes.
std::vector<std::string> SplitPosix(std::string_view s) { return testing::ShellWords(s); }

// ... and by its Windows rules (shlex.Windows, CommandLineToArgvW): blanks
// include \r; only "..." quotes; 2n backslashes before '"' are n backslashes.
std::vector<std::string> SplitWindows(std::string_view s) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false, quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      size_t n = 0;
      while (i + n < s.size() && s[i + n] == '\\') ++n;
      if (i + n < s.size() && s[i + n] == '"') {
        cur += std::string(n / 2, '\\');
        in_word = true;
        if (n % 2 == 1) {
          cur += '"';
          i += n;
        } else {
          i += n - 1;
        }
      } else {
        cur += std::string(n, '\\');
        in_word = true;
        i += n - 1;
      }
    } else if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur += c, in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

// PowerShell (about_Quoting_Rules, about_Comments): '#' starts a comment
// outside strings; '...' is literal with doubled quote characters (' and
// U+2018..U+201B); a backtick at the end of a line continues it. Returns the
// words of `& 'llama-server' ...` and the `$env:NAME = '...'` assignments.
void ReadPowerShell(std::string_view s, std::vector<std::string>* argv,
                    std::map<std::string, std::string>* env) {
  auto quote_len = [&](size_t i) -> size_t {
    if (s[i] == '\'') return 1;
    if (s.substr(i, 2) == "\xE2\x80" && i + 2 < s.size() &&
        static_cast<unsigned char>(s[i + 2]) >= 0x98 &&
        static_cast<unsigned char>(s[i + 2]) <= 0x9B)
      return 3;
    return 0;
  };
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  auto end_statement = [&] {
    if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    if (words.size() == 3 && words[0].rfind("$env:", 0) == 0 && words[1] == "=") {
      (*env)[words[0].substr(5)] = words[2];
    } else if (!words.empty() && words[0] == "&") {
      argv->assign(words.begin() + 1, words.end());
    } else if (!words.empty()) {
      ADD_FAILURE() << "unexpected PowerShell statement: " << words[0];
    }
    words.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '#' && !in_word) {
      while (i < s.size() && s[i] != '\n') ++i;
      end_statement();
    } else if (s[i] == '`' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
    } else if (s[i] == '\n' || s[i] == '\r') {
      end_statement();
    } else if (s[i] == ' ') {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    } else if (const size_t q = quote_len(i); q > 0) {
      in_word = true;
      for (i += q; i < s.size(); ++i) {
        const size_t e = quote_len(i);
        if (e == 0) {
          cur += s[i];
        } else if (quote_len(i + e) == e && s.substr(i, e) == s.substr(i + e, e)) {
          cur.append(s.substr(i, e)), i += 2 * e - 1;
        } else {
          i += e - 1;
          break;
        }
      }
    } else {
      cur += s[i], in_word = true;
    }
  }
  end_statement();
}

// A cmd.exe batch file (learn.microsoft.com cmd, set; the C runtime's
// "Parsing C++ command-line arguments"): REM, @echo, setlocal and chcp lines
// are skipped; `^` at the end of a line joins the next; %% is %; the command's
// words follow the C runtime's rules; `set "NAME=value"` sets a variable.
void ReadBatch(std::string_view s, std::vector<std::string>* argv,
               std::map<std::string, std::string>* env) {
  std::string joined;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '^' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == '%') ++i;
    joined += s[i];
  }
  for (const auto line : SplitLines(joined)) {
    const std::string l(line);
    if (l.empty() || l.rfind("REM ", 0) == 0 || l == "@echo off" ||
        l == "setlocal DisableDelayedExpansion" || l == "chcp 65001 >nul")
      continue;
    if (l.rfind("set \"", 0) == 0 && l.back() == '"') {
      const std::string body = l.substr(5, l.size() - 6);
      (*env)[body.substr(0, body.find('='))] = body.substr(body.find('=') + 1);
    } else if (l.rfind("llama-server", 0) == 0) {
      *argv = SplitWindows(l);
    } else {
      ADD_FAILURE() << "unexpected batch line: " << l;
    }
  }
}

// Ollama's Modelfile reader (parser/parser.go ParseFile): '#' lines are
// comments; an instruction's value runs to the end of the line, a "..." value
// whole. Returns the instructions.
std::vector<std::pair<std::string, std::string>> ReadModelfile(std::string_view s) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto line : SplitLines(s)) {
    if (line.empty() || line[0] == '#') continue;
    std::string_view rest = line;
    const std::string op(NextWord(&rest));
    std::string_view value = Trim(rest);
    if (op == "PARAMETER") {
      const std::string name(NextWord(&value));
      out.emplace_back(name, std::string(Trim(value)));
    } else if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      out.emplace_back(op, std::string(value.substr(1, value.size() - 2)));
    } else {
      out.emplace_back(op, std::string(value));
    }
  }
  return out;
}

void CheckFormat(const Case& k) {
  const EmitFormat f = k.format;
  const ServerConfig& config = k.config;
  const std::string& text = k.text;
  const std::vector<std::string> argv = ServerArgv(config);
  switch (f) {
    case EmitFormat::kServer:
      EXPECT_EQ(NulTerminated(k.shell), argv);
      break;
    case EmitFormat::kEnv:
      EXPECT_EQ(LlamaVariables(k.shell), Expected(config));
      break;
    case EmitFormat::kIni:
      EXPECT_EQ(ArgvFromIni(text), argv);
      break;
    case EmitFormat::kCompose: {
      const auto& doc = k.yaml;
      ASSERT_TRUE(doc.is_object());
      EXPECT_EQ(doc.size(), 1u) << doc.dump();
      EXPECT_EQ(doc["services"].size(), 1u) << doc.dump();
      EXPECT_EQ(doc["services"]["llama-server"]["volumes"][0]["source"], "/models");
      EXPECT_EQ(ArgvFromComposeDoc(doc), *ComposeServerArgv(config));
      break;
    }
    case EmitFormat::kLlamaSwap: {
      const auto& doc = k.yaml;
      ASSERT_TRUE(doc.is_object());
      ASSERT_EQ(doc.size(), 1u) << doc.dump();
      ASSERT_EQ(doc["models"].size(), 1u) << doc.dump();
      const auto& entry = doc["models"].begin().value();
      ASSERT_EQ(entry.size(), 2u) << entry.dump();
      std::string cmd = entry["cmd"].get<std::string>();
      cmd.replace(cmd.find("${PORT}"), 7, "5800");  // llama-swap's startPort default
      ServerConfig served = config;
      served.port = 5800;
      EXPECT_EQ(SplitPosix(cmd), ServerArgv(served));
      EXPECT_EQ(SplitWindows(cmd), ServerArgv(served));
      break;
    }
    case EmitFormat::kPowerShell:
    case EmitFormat::kCmd:
    case EmitFormat::kPowerShellEnv:
    case EmitFormat::kCmdEnv: {
      std::vector<std::string> got;
      std::map<std::string, std::string> env;
      if (f == EmitFormat::kPowerShell || f == EmitFormat::kPowerShellEnv) {
        ReadPowerShell(text, &got, &env);
      } else {
        ReadBatch(text, &got, &env);
      }
      const bool env_form = f == EmitFormat::kPowerShellEnv || f == EmitFormat::kCmdEnv;
      EXPECT_EQ(got, env_form ? std::vector<std::string>{"llama-server"} : argv) << text;
      const std::map<std::string, std::string> none;
      EXPECT_EQ(env, env_form ? Expected(config) : none) << text;
      break;
    }
    case EmitFormat::kOllama: {
      const auto cmds = ReadModelfile(text);
      ASSERT_FALSE(cmds.empty());
      EXPECT_EQ(cmds[0], std::make_pair(std::string("FROM"), config.model));
      for (size_t i = 1; i < cmds.size(); ++i)
        EXPECT_TRUE(cmds[i].first == "num_ctx" || cmds[i].first == "num_thread" ||
                    cmds[i].first == "num_batch")
            << cmds[i].first << " in\n"
            << text;
      break;
    }
  }
}

// Every format with `c` in the model path, then in a header line, is added to
// `cases` to be read back; refusals and raw bytes are checked here.
void EmitAll(const std::string& c, std::vector<Case>* cases) {
  const std::string plain = "/models/plain.gguf";
  for (EmitFormat f : EmitFormats()) {
    const std::string trace = std::string(EmitFormatName(f)) + " with \\x" +
                              fmt::format("{:02x}", static_cast<unsigned char>(c.back()));
    SCOPED_TRACE(trace);
    // In the model path.
    const ServerConfig config = Config(c);
    auto r = EmitServerConfig(f, config, Header("x"));
    if (r.ok()) {
      cases->push_back({trace + " in the model path", f, config, *r, {}, {}});
    } else {
      EXPECT_NE(r.error().message().find("cannot carry"), std::string::npos) << r.error().message();
      EXPECT_NE(r.error().message().find("/models/a"), std::string::npos) << r.error().message();
      EXPECT_EQ(r.error().message().find(c), std::string::npos) << "the value is shown raw";
    }
    // In a header line: never refused, never live.
    ServerConfig clean = Config("");
    clean.model = plain;
    auto h = EmitServerConfig(f, clean, Header(c));
    ASSERT_TRUE(h.ok()) << h.error().message();
    // Split into comment lines at a line break; nothing else is written raw.
    if (c != "\n") {
      EXPECT_EQ(h->find(c), std::string::npos) << "written raw:\n" << *h;
    }
    cases->push_back({trace + " in a header line", f, clean, *h, {}, {}});
  }
}

TEST(EmitInjection, EveryControlAndLineBreakInEveryFormat) {
  std::vector<Case> cases;
  for (const std::string& c : Characters()) EmitAll(c, &cases);
  // Every header case at least: the checks below are not vacuous.
  ASSERT_GE(cases.size(), Characters().size() * EmitFormats().size());
  ReadBack(&cases);
  for (const Case& k : cases) {
    SCOPED_TRACE(k.trace);
    CheckFormat(k);
  }
}

TEST(EmitInjection, NulIsRefusedEverywhere) {
  ServerConfig config = Config("");
  config.model = std::string("/models/a\0b.gguf", 16);
  for (EmitFormat f : EmitFormats()) {
    auto r = EmitServerConfig(f, config, Header(""));
    ASSERT_FALSE(r.ok()) << EmitFormatName(f);
    EXPECT_NE(r.error().message().find("NUL"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace moetune
