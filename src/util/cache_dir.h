#pragma once
/// Where moetune keeps what it can measure again (engine probes, tune
/// journals): $XDG_CACHE_HOME/moetune, else ~/.cache/moetune (the XDG base
/// directory rule), the one place every cache of moetune derives from.

#include <string>

namespace moetune {

/// "$XDG_CACHE_HOME/moetune" or "$HOME/.cache/moetune"; "" when neither
/// variable is set (then nothing is cached).
std::string MoetuneCacheDir();

}  // namespace moetune
