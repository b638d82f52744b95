#include "report/emit_windows.h"

#include <fmt/format.h>

#include "report/emit_text.h"

namespace moetune {
namespace {

// cmd.exe refuses a command line longer than 8191 characters
// (learn.microsoft.com, "Command prompt (Cmd. exe) command-line string limitation").
constexpr size_t kCmdMaxLine = 8191;

// An argument of a native command called with `&`. PowerShell passes it to
// the program's command line (about_Parsing, "Passing arguments that contain
// quote characters"). Windows PowerShell 5.1 and PowerShell before 7.3
// (`$PSNativeCommandArgumentPassing = 'Legacy'`, about_Preference_Variables)
// drop an empty argument, do not escape an embedded '"', and wrap an argument
// with blanks in quotes without doubling a trailing backslash (which the
// program then reads as an escaped quote). Such values are refused rather
// than passed differently by different PowerShell versions.
Result<std::string> PowerShellArgument(std::string_view flag, std::string_view value) {
  const char* problem = nullptr;
  if (value.empty()) {
    problem = "is empty";
  } else if (value.find('"') != std::string_view::npos) {
    problem = "holds a double quote";
  } else if (value.back() == '\\' && value.find_first_of(" \t") != std::string_view::npos) {
    problem = "has blanks and ends with a backslash";
  }
  if (problem != nullptr) {
    return CannotCarry(flag, value, problem, "PowerShell's native-command argument passing",
                       "powershell-env");
  }
  // The stop-parsing token --% would make the rest of the line cmd.exe-like
  // text; every argument is quoted, so it never appears bare.
  return PowerShellQuoted(value);
}

std::string PowerShellIntro() {
  return "# PowerShell: run with  powershell -ExecutionPolicy Bypass -File THIS_FILE.ps1\n"
         "# (or paste). Strings are single-quoted: nothing in them is expanded\n"
         "# (about_Quoting_Rules).\n";
}

Result<std::string> BatchValue(std::string_view flag, std::string_view value, bool word) {
  auto r = word ? BatchWord(value) : BatchText(value);
  if (!r.ok())
    return CannotCarry(flag, value, r.error().message(), "a cmd.exe batch file",
                       "powershell or powershell-env");
  return r;
}

// REM lines: `%` is expanded even there (doubled, it stays), and a caret at
// the end of a line would continue it onto the next.
std::string BatchComments(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& text : CommentTexts(lines)) {
    std::string t;
    for (char c : text) t += c == '%' ? std::string("%%") : std::string(1, c);
    if (!t.empty() && t.back() == '^') t += ' ';
    out += "REM " + t + "\n";
  }
  return out;
}

// @echo off, a known expansion state and UTF-8: cmd.exe reads each line of a
// batch file in the console's code page at the time (chcp 65001 is UTF-8), and
// with delayed expansion enabled by default on some machines, '!' would expand.
std::string BatchPrologue() {
  return "@echo off\n"
         "setlocal DisableDelayedExpansion\n"
         "REM UTF-8 for the paths below (this changes the console's code page).\n"
         "chcp 65001 >nul\n";
}

Status BatchLength(size_t length) {
  if (length <= kCmdMaxLine) return OkStatus();
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("the command is {} characters long; cmd.exe runs at most {}: use "
                           "--emit powershell",
                           length, kCmdMaxLine));
}

}  // namespace

Result<std::string> EmitPowerShell(const std::vector<FlagSetting>& settings,
                                   const EmitContext& ctx) {
  std::string out = CommentBlock(ctx.header, "#") + PowerShellIntro();
  out += "& 'llama-server'";
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    out += " `\n  " + PowerShellQuoted(f.spelling);
    if (f.takes_value()) {
      MOETUNE_ASSIGN_OR_RETURN(const std::string v, PowerShellArgument(f.spelling, s.value));
      out += " " + v;
    }
  }
  return out + "\n";
}

Result<std::string> EmitPowerShellEnv(const ServerConfig& config, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto vars, LlamaEnvironment(config));
  std::string out = CommentBlock(ctx.header, "#") + PowerShellIntro();
  // Environment values are not command-line arguments: every character but
  // NUL arrives as written.
  for (const auto& [name, value] : vars) {
    out += fmt::format("$env:{} = {}\n", name, PowerShellQuoted(value));
  }
  return out + "& 'llama-server'\n";
}

Result<std::string> EmitBatch(const std::vector<FlagSetting>& settings, const EmitContext& ctx) {
  std::string out = BatchPrologue() + BatchComments(ctx.header);
  std::string command = "llama-server";
  size_t length = command.size();
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    std::string words = f.spelling;
    if (f.takes_value()) {
      MOETUNE_ASSIGN_OR_RETURN(const std::string v, BatchValue(f.spelling, s.value, true));
      words += " " + v;
    }
    length += 1 + words.size();
    // A caret at the end of a line continues the command; the next line starts
    // with blanks because the caret also escapes the first character there.
    command += " ^\n  " + words;
  }
  MOETUNE_TRY(BatchLength(length));
  return out + command + "\n";
}

Result<std::string> EmitBatchEnv(const ServerConfig& config, const EmitContext& ctx) {
  MOETUNE_ASSIGN_OR_RETURN(auto vars, LlamaEnvironment(config));
  std::string out = BatchPrologue() + BatchComments(ctx.header);
  for (const auto& [name, value] : vars) {
    // set "NAME=value": the quotes keep & | < > ^ literal and leave no
    // trailing blank in the value; a '"' inside would end them.
    MOETUNE_ASSIGN_OR_RETURN(const std::string v, BatchValue(name, value, false));
    out += fmt::format("set \"{}={}\"\n", name, v);
    MOETUNE_TRY(BatchLength(name.size() + v.size() + 7));
  }
  return out + "llama-server\n";
}

}  // namespace moetune
