#pragma once
/// Reading a whole small file (a profile, a cache entry, a /proc or /sys
/// text) safely: only regular files are opened (a FIFO would block forever,
/// /dev/zero would never end, a directory is not "invalid JSON"), the read is
/// bounded, and errors name the path, what it is and errno's own words.

#include <cstddef>
#include <string>

#include "util/result.h"

namespace moetune {

/// The contents of `path`, at most `max_bytes`. Errors: kNotFound (missing),
/// kInvalidArgument (a directory or another non-regular file), kIo (unreadable
/// or larger than `max_bytes`). The open never blocks, even on a FIFO.
Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes);

}  // namespace moetune
