#pragma once
/// A process-wide registry of temporary files being written, so that a signal
/// that ends moetune (SIGINT, SIGTERM, ...) removes them instead of leaving a
/// half-written 100 MB `.tmp` file behind. Registration copies the path into a
/// fixed slot; RemoveRegisteredTempFiles only reads slots and calls unlink(2),
/// so it is async-signal-safe and can run inside a signal handler.

#include <string>

namespace moetune {

/// Registers `path`; returns the slot to pass to UnregisterTempFile, or -1 when
/// the registry is full or the path too long (the file is then only removed by
/// normal error handling).
int RegisterTempFile(const std::string& path);

/// Forgets a slot (after the file was renamed into place or removed).
void UnregisterTempFile(int slot);

/// Unlinks every registered file. Async-signal-safe.
void RemoveRegisteredTempFiles();

/// Number of registered files (for tests).
int RegisteredTempFileCount();

}  // namespace moetune
