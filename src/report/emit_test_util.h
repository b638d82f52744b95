#pragma once
// Readers for the configurations `--emit` writes, for tests: each turns one
// format back into a llama-server argument vector, independently of the
// writer (report/emit.cc), so that a test can assert that every format
// describes the same command. They read the subset moetune writes and fail
// loudly (ADD_FAILURE) on anything else.

#include <gtest/gtest.h>
#include <stdio.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/flags.h"
#include "report/emit.h"
#include "util/temp_dir_test_util.h"

namespace moetune::testing {

// Words of POSIX shell text: comments, `\`-newline continuations, single
// quotes, double quotes (with \\, \", \$, \`), backslash escapes.
inline std::vector<std::string> ShellWords(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) {
        ADD_FAILURE() << "unterminated single quote in: " << text;
        return words;
      }
      cur += std::string(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("\\\"$`").find(text[i + 1]) != std::string_view::npos) {
          ++i;
        }
        cur += text[i];
      }
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
    } else {
      cur += c;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

// Flags in the vocabulary's order (config/flags.h), with values, rebuilt
// from name -> value pairs. A switch is on when its value is "true" (llama.cpp also takes on,
// enabled, 1) and then stands alone; any other value is a failure.
inline std::vector<std::string> Ordered(
    const std::vector<std::pair<const FlagSpec*, std::string>>& pairs) {
  std::vector<std::string> argv = {"llama-server"};
  for (const auto& f : Flags()) {
    for (const auto& [flag, value] : pairs) {
      if (flag != &f) continue;
      if (f.takes_value()) {
        argv.insert(argv.end(), {f.spelling, value});
      } else if (value == "true" || value == "on" || value == "enabled" || value == "1") {
        argv.push_back(f.spelling);
      } else {
        ADD_FAILURE() << f.spelling << " is a switch, written with value '" << value << "'";
      }
    }
  }
  return argv;
}

// `--emit env`: NAME=value lines (values shell-quoted).
inline std::vector<std::string> ArgvFromEnv(std::string_view text) {
  std::vector<std::pair<const FlagSpec*, std::string>> pairs;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      ADD_FAILURE() << "not NAME=value: " << line;
      continue;
    }
    const std::string name(line.substr(0, eq));
    const auto value = ShellWords(line.substr(eq + 1));
    const FlagSpec* flag = nullptr;
    for (const auto& f : Flags()) flag = f.env && name == f.env ? &f : flag;
    if (flag == nullptr || value.size() != 1) {
      ADD_FAILURE() << "unknown variable or not one word: " << line;
      continue;
    }
    pairs.push_back({flag, value[0]});
  }
  return Ordered(pairs);
}

// `--emit ini`: `key = value` lines of the one section (llama.cpp's rules:
// ';' and '#' start comments, blanks around the value are dropped).
inline std::vector<std::string> ArgvFromIni(std::string_view text, std::string* section = nullptr) {
  std::vector<std::pair<const FlagSpec*, std::string>> pairs;
  size_t start = 0;
  bool in_section = false;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (const size_t c = line.find_first_of(";#"); c != std::string_view::npos)
      line = line.substr(0, c);
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (in_section) ADD_FAILURE() << "a second section: " << line;
      in_section = true;
      if (section) *section = std::string(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      ADD_FAILURE() << "not key = value: " << line;
      continue;
    }
    const std::string key(trim(line.substr(0, eq)));
    const std::string value(trim(line.substr(eq + 1)));
    if (!in_section) {
      if (key != "version") ADD_FAILURE() << "key outside a section: " << key;
      continue;
    }
    const FlagSpec* flag = nullptr;
    for (const auto& f : Flags()) flag = key == PresetKey(f) ? &f : flag;
    if (flag == nullptr) {
      ADD_FAILURE() << "unknown preset key: " << key;
      continue;
    }
    pairs.push_back({flag, value});
  }
  return Ordered(pairs);
}

// Runs `argv` (no shell), feeding nothing, and returns its stdout; a failure
// to start or a non-zero exit is a test failure. For the real parsers the
// emit tests read the formats back with (python3 with PyYAML, /bin/sh).
inline std::string RunTool(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += ShellQuoteWord(a) + " ";
  FILE* p = ::popen((cmd + "</dev/null").c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "cannot run " << cmd;
    return "";
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = ::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd << " failed (python3 and python3-yaml come with scripts/install-deps.sh)";
  return out;
}

// Writes `text` to `path` byte for byte; a failure is a test failure.
inline void WriteText(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out.flush()) ADD_FAILURE() << "cannot write " << path;
}

// The bytes of `path` ("" with a test failure if it cannot be read).
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// YAML documents read by PyYAML (a real YAML parser, YAML 1.1 line breaks
// included), as JSON, in one python3 run (starting it costs far more than
// parsing): element i is documents[i]'s; a document PyYAML rejects, or one
// JSON cannot hold, is a test failure and a discarded value.
inline std::vector<nlohmann::json> YamlLoadAll(const std::vector<std::string>& documents) {
  TempDir dir;
  for (size_t i = 0; i < documents.size(); ++i)
    WriteText(dir.File(std::to_string(i)), documents[i]);
  const std::string out =
      RunTool({"python3", "-c",
               "import json,os,sys,yaml\n"
               "docs = []\n"
               "for i in range(int(sys.argv[2])):\n"
               "    try:\n"
               "        with open(os.path.join(sys.argv[1], str(i)), 'rb') as f:\n"
               "            docs.append(json.dumps({'doc': yaml.safe_load(f)}))\n"
               "    except Exception as e:\n"
               "        docs.append(json.dumps({'error': repr(e)}))\n"
               "sys.stdout.write('[' + ','.join(docs) + ']')\n",
               dir.path(), std::to_string(documents.size())});
  const auto all = nlohmann::json::parse(out, nullptr, false);
  std::vector<nlohmann::json> docs(documents.size(), nlohmann::json::value_t::discarded);
  if (!all.is_array() || all.size() != documents.size()) {
    ADD_FAILURE() << "PyYAML gave no JSON list of " << documents.size() << " documents";
    return docs;
  }
  for (size_t i = 0; i < documents.size(); ++i) {
    if (all[i].contains("doc")) {
      docs[i] = all[i]["doc"];
    } else {
      ADD_FAILURE() << "PyYAML cannot read (" << all[i].value("error", "") << "):\n"
                    << documents[i];
    }
  }
  return docs;
}

// One YAML document read by PyYAML, as JSON.
inline nlohmann::json YamlLoad(std::string_view text) {
  return YamlLoadAll({std::string(text)})[0];
}

// `--emit compose` read by PyYAML (`doc`): the items of `command:`, with
// compose's `$$` for a literal `$`.
inline std::vector<std::string> ArgvFromComposeDoc(const nlohmann::json& doc) {
  std::vector<std::string> argv = {"llama-server"};
  const auto* command = doc.is_object() && doc.contains("services") &&
                                doc["services"].contains("llama-server") &&
                                doc["services"]["llama-server"].contains("command")
                            ? &doc["services"]["llama-server"]["command"]
                            : nullptr;
  if (command == nullptr || !command->is_array()) {
    ADD_FAILURE() << "no services.llama-server.command list in:\n" << doc.dump();
    return argv;
  }
  for (const auto& item : *command) {
    const std::string v = item.get<std::string>();
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '$' && i + 1 < v.size() && v[i + 1] == '$') ++i;
      out += v[i];
    }
    argv.push_back(out);
  }
  return argv;
}

// `--emit compose`: the text read by PyYAML, then as ArgvFromComposeDoc.
inline std::vector<std::string> ArgvFromCompose(std::string_view text) {
  return ArgvFromComposeDoc(YamlLoad(text));
}

}  // namespace moetune::testing
