#pragma once
/// The escaping writers of the `--emit` formats (report/emit.h), one per
/// format, so that no text from outside (a model file's name, a tune file's
/// `machine` text in the header) can start live content in any of them:
///
/// - comments: every line break (\n \r \v \f U+0085 U+2028 U+2029) starts a new
///   comment line, and every other control (C0, DEL, C1, bidirectional
///   controls) is shown as a visible escape (util/utf8.h ForTerminalField);
/// - YAML (compose, llama-swap): double-quoted scalars with every control and
///   Unicode line break escaped (YAML 1.2 section 5.7: \x.., \N, \L, \P, \u....);
/// - POSIX shell (server, env): ShellQuoteWord (report/emit.h), single quotes,
///   which carry every byte but NUL;
/// - PowerShell: single-quoted strings (about_Quoting_Rules);
/// - cmd.exe batch files: double quotes, `%%`, no `"` and no controls.
///
/// A value a format cannot carry is an error naming the value (made visible),
/// the problem and the formats that can carry it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// \n \r \v \f U+0085 U+2028 U+2029: what ends a line for some reader (YAML 1.1,
/// editors, JavaScript, Python's str.splitlines).
bool IsLineBreak(uint32_t code_point);

/// `lines` as comment text: split at every line break, each piece made safe
/// with ForTerminalField (controls, bidirectional controls and ill-formed UTF-8
/// shown as escapes) and U+FFFE/U+FFFF escaped (YAML readers refuse them).
std::vector<std::string> CommentTexts(const std::vector<std::string>& lines);

/// One `mark text` line per CommentTexts piece.
std::string CommentBlock(const std::vector<std::string>& lines, std::string_view mark);

/// The error for a value that `format` cannot carry: names the flag, the value
/// (made visible), the problem and the formats that can.
Error CannotCarry(std::string_view flag, std::string_view value, std::string_view problem,
                  std::string_view format, std::string_view instead);

/// A YAML double-quoted scalar of `value`: `"` and `\` escaped, every C0 and
/// C1 control, DEL, U+2028/U+2029, the bidirectional controls, U+FEFF and
/// U+FFFE/U+FFFF as escapes (\t, \n, \x1b, \N, \L, \P, \u202e). Errors when
/// `value` is not UTF-8 (a YAML file is Unicode text); the message is the problem.
Result<std::string> YamlQuoted(std::string_view value);

/// A PowerShell single-quoted string: every character literal; the quote
/// characters PowerShell takes as single quotes (' and U+2018..U+201B,
/// about_Quoting_Rules) are doubled.
std::string PowerShellQuoted(std::string_view value);

/// A word of a cmd.exe batch file for a program's command line: bare when
/// plain, else in double quotes (with the backslashes before the closing
/// quote doubled, the Microsoft C runtime's rule); `%` written `%%` (a batch
/// file expands %VAR% even inside quotes). Errors (the message is the problem)
/// for `"` and control characters, which a batch line cannot carry.
Result<std::string> BatchWord(std::string_view value);

/// `value` with `%` doubled for a batch file; errors as BatchWord.
Result<std::string> BatchText(std::string_view value);

/// A section or entry name from the model's file name (without .gguf), or
/// `preferred` when given: brackets, `;`, `#`, `$`, controls and line breaks
/// become '-' so that it stays one plain token in every format.
std::string EntryName(std::string_view preferred, std::string_view model_path);

}  // namespace moetune
