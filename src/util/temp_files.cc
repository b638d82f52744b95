#include "util/temp_files.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>

namespace moetune {
namespace {

// A handful of slots is plenty: moetune writes at most a few files at once.
constexpr int kSlots = 16;

enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};

std::array<Slot, kSlots> g_slots;

}  // namespace

int RegisterTempFile(const std::string& path) {
  if (path.empty() || path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(kReady, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnregisterTempFile(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

void RemoveRegisteredTempFiles() {
  for (auto& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == kReady) ::unlink(s.path);
  }
}

int RegisteredTempFileCount() {
  int n = 0;
  for (auto& s : g_slots) n += s.state.load() == kReady ? 1 : 0;
  return n;
}

}  // namespace moetune
