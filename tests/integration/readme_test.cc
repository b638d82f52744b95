// Integration: every moetune command README.md shows works as written. Each
// command (in a code block or an inline code span) names a real subcommand
// and only flags its `--help` lists; the set-up's `build/moetune` lines that
// need no demo files run, in order, in one folder, and print the sample
// output the README quotes; every model reference the README shows resolves
// against a store laid out as the tool that fills it does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "store/stores_test_util.h"
#include "support.h"

namespace moetune::itest {
namespace {

struct ReadmeCommand {
  int line = 0;
  std::string text;   // "moetune tune MODEL --ctx 32K" (or "build/moetune ...")
  bool code = false;  // a line of a code block (runnable), not an inline span
};

std::vector<std::string> ReadmeLines() {
  std::ifstream in(std::string(MOETUNE_SOURCE_DIR) + "/README.md");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string TrimLeft(const std::string& s) {
  const size_t i = s.find_first_not_of(' ');
  return i == std::string::npos ? "" : s.substr(i);
}

bool IsMoetune(const std::string& s) {
  return StartsWith(s, "moetune ") || StartsWith(s, "build/moetune ");
}

// Code lines are indented by four spaces (the README's code blocks); inline
// spans are `moetune ...` anywhere else.
std::vector<ReadmeCommand> ReadmeCommands() {
  std::vector<ReadmeCommand> out;
  const auto lines = ReadmeLines();
  const std::regex span("`((?:build/)?moetune [^`]*)`");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const int n = static_cast<int>(i) + 1;
    if (StartsWith(l, "    ")) {
      const std::string t = TrimLeft(l);
      if (IsMoetune(t)) out.push_back({n, t, true});
      continue;
    }
    for (auto it = std::sregex_iterator(l.begin(), l.end(), span); it != std::sregex_iterator();
         ++it) {
      out.push_back({n, (*it)[1].str(), false});
    }
  }
  return out;
}

// Words of a command up to a redirection or comment; brackets of optional
// parts ("[--check]") removed.
std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) {
    if (w == ">" || w == "|" || w == "#" || w == "&&" || w == "2>") break;
    while (!w.empty() && w.front() == '[') w.erase(0, 1);
    while (!w.empty() && w.back() == ']') w.pop_back();
    if (!w.empty()) words.push_back(w);
  }
  return words;
}

bool IsFlag(const std::string& w) {
  return w.size() >= 2 && w[0] == '-' &&
         (std::isalpha(static_cast<unsigned char>(w[1])) || (w[1] == '-' && w.size() > 2));
}

// True when `help` lists `flag` as an option name ("-t,--threads", "  --ctx ").
bool HelpLists(const std::string& help, const std::string& flag) {
  for (size_t p = help.find(flag); p != std::string::npos; p = help.find(flag, p + 1)) {
    const char before = p == 0 ? ' ' : help[p - 1];
    const size_t end = p + flag.size();
    const char after = end < help.size() ? help[end] : ' ';
    const bool word_before = before == ' ' || before == ',';
    const bool word_after = after == ' ' || after == ',' || after == '\n' || after == '=';
    if (word_before && word_after) return true;
  }
  return false;
}

TEST(Readme, EveryCommandNamesARealSubcommandAndRealFlags) {
  const auto commands = ReadmeCommands();
  // The README shows a few dozen; far fewer means the extraction broke.
  ASSERT_GE(commands.size(), 30u);
  // The subcommands `moetune --help` lists (an unknown word before --help
  // still prints the main help and exits 0, so the list is what counts).
  const CommandResult main_help = RunCommand({MoetuneBinary(), "--help"}, 60);
  ASSERT_EQ(main_help.exit_code, 0) << main_help.err;
  std::set<std::string> subcommands;
  {
    std::istringstream in(main_help.out.substr(main_help.out.find("Subcommands:")));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream words(line);
      if (std::string w; words >> w) subcommands.insert(w);
    }
  }
  ASSERT_TRUE(subcommands.count("tune")) << main_help.out;
  std::map<std::string, std::string> help;  // subcommand -> its --help
  for (const auto& c : commands) {
    const auto words = Words(c.text);
    ASSERT_GE(words.size(), 2u) << "README.md:" << c.line << ": " << c.text;
    const std::string& sub = words[1];
    if (!subcommands.count(sub)) {
      ADD_FAILURE() << "README.md:" << c.line << ": `" << c.text << "`: moetune has no command "
                    << sub;
      continue;
    }
    if (!help.count(sub)) {
      const CommandResult r = RunCommand({MoetuneBinary(), sub, "--help"}, 60);
      EXPECT_EQ(r.exit_code, 0) << "README.md:" << c.line << ": `" << c.text << "`: moetune " << sub
                                << " --help: " << r.err;
      help[sub] = r.out;
    }
    for (size_t i = 2; i < words.size(); ++i) {
      std::string flag = words[i];
      if (!IsFlag(flag)) continue;
      flag = flag.substr(0, flag.find('='));
      EXPECT_TRUE(HelpLists(help[sub], flag)) << "README.md:" << c.line << ": `" << c.text
                                              << "`: moetune " << sub << " has no option " << flag;
    }
  }
}

TEST(Readme, HelpListsMatchesOnlyWholeOptionNames) {
  const std::string help = "  -c,--ctx TEXT  context\n  --ctx-size N\n  -o,--output TEXT\n";
  EXPECT_TRUE(HelpLists(help, "--ctx"));
  EXPECT_TRUE(HelpLists(help, "-c"));
  EXPECT_TRUE(HelpLists(help, "-o"));
  EXPECT_FALSE(HelpLists(help, "--ct"));
  EXPECT_FALSE(HelpLists(help, "-t"));
  EXPECT_FALSE(HelpLists(help, "--output-file"));
}

TEST(Readme, SetUpCommandsRunAsWrittenAndPrintWhatTheReadmeQuotes) {
  // The `build/moetune` lines of the set-up that need no files of
  // scripts/demo.sh (.moetune/demo/...), run in order in one folder.
  TempDir dir;
  std::string output;
  int ran = 0;
  for (const auto& c : ReadmeCommands()) {
    if (!c.code || !StartsWith(c.text, "build/moetune ") ||
        c.text.find(".moetune/demo/") != std::string::npos) {
      continue;
    }
    const std::string line =
        "'" + MoetuneBinary() + "'" + c.text.substr(std::string("build/moetune").size());
    // Its own cache folder: a tune's journal from an earlier run of the same
    // lines (by hand or another test run) would otherwise be resumed.
    const CommandResult r = RunCommand(
        {"bash", "-c",
         "cd '" + dir.path().string() + "' && XDG_CACHE_HOME='" + dir.File("cache") + "' " + line},
        600);
    EXPECT_EQ(r.exit_code, 0) << "README.md:" << c.line << ": " << c.text << "\n" << r.err;
    output += r.out;
    ++ran;
  }
  ASSERT_GE(ran, 3) << "the README's runnable set-up commands are gone";
  // What the set-up's commands leave behind is what the README goes on to use.
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "tune.json"));
  EXPECT_GT(std::filesystem::file_size(dir.path() / "qwen.ini"), 0u);
  // The sample output the README quotes comes from those commands.
  int quoted = 0;
  for (const auto& l : ReadmeLines()) {
    const std::string t = TrimLeft(l);
    if (StartsWith(l, "    ") &&
        (StartsWith(t, "llama-server -m q3.gguf") || StartsWith(t, "Time to answer"))) {
      ++quoted;
      EXPECT_NE(output.find(t), std::string::npos)
          << "README quotes `" << t << "`, the commands printed:\n"
          << output;
    }
  }
  EXPECT_GE(quoted, 2);
}

TEST(Readme, ModelReferencesResolveAsWritten) {
  // Every concrete reference in the README, against stores laid out as the
  // Hugging Face hub and Ollama lay them out, holding a small generated model.
  TempDir dir;
  std::string error;
  const std::string model = SynthModel(dir.File("m.gguf"), "qwen3moe", "tiny", &error);
  ASSERT_FALSE(model.empty()) << error;
  const std::regex ref(R"((hf|ollama|lmstudio):([A-Za-z0-9._/-]+)(:[A-Za-z0-9._-]+)?)");
  std::set<std::string> refs;
  for (const auto& l : ReadmeLines()) {
    for (auto it = std::sregex_iterator(l.begin(), l.end(), ref); it != std::sregex_iterator();
         ++it) {
      const std::string whole = (*it)[0].str();
      // Placeholders of the forms (ORG/REPO, NAME, PUBLISHER/MODEL) are not references.
      if (std::regex_search(whole, std::regex(":(ORG|NAME|PUBLISHER)\\b"))) continue;
      refs.insert(whole);
    }
  }
  ASSERT_FALSE(refs.empty());
  const std::string hub = dir.File("hub");
  const std::string ollama = dir.File("ollama");
  int n = 0;
  for (const auto& r : refs) {
    const size_t colon = r.find(':');
    const std::string kind = r.substr(0, colon);
    std::string rest = r.substr(colon + 1);
    if (kind == "hf") {
      const size_t q = rest.find(':');
      const std::string repo = rest.substr(0, q);
      const std::string quant = q == std::string::npos ? "" : rest.substr(q + 1);
      std::string name = repo.substr(repo.find('/') + 1);
      if (name.size() > 5 && name.compare(name.size() - 5, 5, "-GGUF") == 0)
        name.resize(name.size() - 5);
      moetune::testing::AddHubFiles(
          hub, repo, "0123456789abcdef0123456789abcdef01234567",
          {{fmt::format("{}{}{}.gguf", name, quant.empty() ? "" : "-", quant), model}});
    } else if (kind == "ollama") {
      const size_t q = rest.find(':');
      const std::string name = rest.substr(0, q);
      const std::string tag = q == std::string::npos ? "latest" : rest.substr(q + 1);
      const std::string path =
          fmt::format("registry.ollama.ai/{}{}/{}",
                      name.find('/') == std::string::npos ? "library/" : "", name, tag);
      moetune::testing::AddOllamaModel(ollama, path,
                                       moetune::testing::Hex(static_cast<char>('a' + n++)), model);
    } else {
      ADD_FAILURE() << "README shows " << r << ": add its store to this test";
    }
  }
  const std::vector<std::pair<std::string, std::string>> env = {
      {"HOME", dir.File("home")}, {"HF_HUB_CACHE", hub}, {"OLLAMA_MODELS", ollama}, {"HF_HOME", ""},
      {"XDG_CACHE_HOME", ""},     {"LLAMA_CACHE", ""}};
  for (const auto& r : refs) {
    const CommandResult c = RunCommand({MoetuneBinary(), "inspect", r}, 120, env);
    EXPECT_EQ(c.exit_code, 0) << r << ": " << c.err;
  }
}

}  // namespace
}  // namespace moetune::itest
