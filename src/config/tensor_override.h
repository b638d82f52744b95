#pragma once
/// Tensor buffer overrides (`-ot pattern=BUFT`) passed through intact.
///
/// llama.cpp's two front ends split an -ot value differently: llama-server,
/// llama-cli and llama-fit-params (common/arg.cpp) split it at ',' into rules;
/// llama-bench (tools/llama-bench/llama-bench.cpp, parse_cmd_params) splits it
/// at ',' into alternatives to sweep and at ';' into the rules of one
/// alternative. Both take the pattern up to the first '='. So a regex that
/// holds a comma (`blk\.[0-9]{1,2}\.`), a ';' or a '=' cannot reach either
/// tool as written, and two rules given to llama-bench with a comma become two
/// separate tests. moetune parses the rules once, rewrites each pattern into
/// an equivalent one without those three characters, and joins the rules the
/// way the receiving tool expects.

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// One rule: tensors whose name matches `pattern` (an ECMAScript regex,
/// searched, as llama.cpp does) are placed in buffer type `buft` ("CPU", "CUDA0").
struct OverrideRule {
  std::string pattern;
  std::string buft;
  bool operator==(const OverrideRule&) const = default;
};

/// Parses "pattern=BUFT[,pattern=BUFT...]"; ';' separates rules too. A ',' or
/// ';' inside a regex construct ({1,3}, [;,], (a|b)) or escaped belongs to the
/// pattern; the buffer type is what follows the last '=' of a rule. Errors
/// name the rule and what is missing.
Result<std::vector<OverrideRule>> ParseTensorOverrides(std::string_view text);

/// `pattern` rewritten so that it holds no ',', ';' or '=' and matches the same
/// names: a literal becomes \x2c, \x3b or \x3d, and a counted repetition
/// A{m,n} becomes (?:A){m}(?:(?:A)?){n-m} (A{m,} becomes (?:A){m}(?:A)*). A
/// pattern without those characters is returned unchanged. Errors for
/// patterns it cannot rewrite safely (a quantifier with nothing before it,
/// back-references in a pattern whose groups would be duplicated).
Result<std::string> CommaFreePattern(std::string_view pattern);

/// The rules as llama-bench's -ot value: one alternative, rules joined by ';'.
Result<std::string> OverridesForBench(const std::vector<OverrideRule>& rules);

/// The rules as llama-server's / llama-fit-params' -ot value, joined by ','.
Result<std::string> OverridesForCommon(const std::vector<OverrideRule>& rules);

}  // namespace moetune
