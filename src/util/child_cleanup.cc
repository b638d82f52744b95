#include "util/child_cleanup.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string_view>

#include "util/temp_files.h"

namespace moetune {
namespace {

// Registry of live child process groups. A fixed array of atomics because the
// signal handler reads it and may use nothing but async-signal-safe operations.
constexpr int kMaxGroups = 256;
std::array<std::atomic<pid_t>, kMaxGroups> g_groups{};
std::atomic<bool> g_termination_requested{false};

// Mechanism 2: the guardian's socket (moetune's end) and pid.
std::atomic<int> g_guardian_fd{-1};
std::atomic<pid_t> g_guardian_pid{0};
std::mutex g_guardian_mutex;
std::once_flag g_atfork_once;

// How long the handler and the guardian wait for SIGTERM to work before SIGKILL.
constexpr int kGraceSteps = 50;
constexpr long kGraceStepMs = 20;

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// True when /proc says `pid` exists and is not a zombie. Async-signal-safe:
// open/read/close only, the path built by hand (no snprintf).
bool ProcessRunning(pid_t pid) {
  char path[40] = "/proc/";
  char digits[16];
  int n = 0;
  for (auto v = static_cast<uint32_t>(pid); n == 0 || v > 0; v /= 10) {
    digits[n++] = static_cast<char>('0' + v % 10);
  }
  std::size_t len = 6;
  while (n > 0) path[len++] = digits[--n];
  for (const char c : std::string_view("/stat")) path[len++] = c;
  path[len] = '\0';
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t got = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (got <= 0) return false;
  // "pid (comm) S ...": comm is at most 16 bytes, so the state is in the buffer.
  ssize_t close_paren = -1;
  for (ssize_t i = 0; i < got; ++i) {
    if (buf[i] == ')') close_paren = i;
  }
  if (close_paren < 0 || close_paren + 2 >= got) return false;
  const char state = buf[close_paren + 2];
  return state != 'Z' && state != 'X';
}

bool AnyLeaderRunning() {
  for (auto& slot : g_groups) {
    const pid_t g = slot.load();
    if (g > 0 && ProcessRunning(g)) return true;
  }
  return false;
}

bool EnvSays(const char* value) {
  const char* v = std::getenv("MOETUNE_CHILD_CLEANUP");
  return v != nullptr && std::strcmp(v, value) == 0;
}

extern "C" void OnTerminationSignal(int sig) {
  const int saved_errno = errno;
  g_termination_requested.store(true);
  SignalAllChildGroups(SIGTERM);
  // A short grace so that servers can close sockets; a leader that is a zombie
  // has exited already (this handler never reaps, so its group id stays
  // reserved and the SIGKILL below cannot reach an unrelated process).
  for (int i = 0; i < kGraceSteps && AnyLeaderRunning(); ++i) SleepMs(kGraceStepMs);
  SignalAllChildGroups(SIGKILL);
  // No half-written output file survives either (util/temp_files.h).
  RemoveRegisteredTempFiles();
  // SA_RESETHAND restored the default action; the re-raised signal is
  // delivered when the handler returns, ending moetune with the usual status.
  errno = saved_errno;
  ::raise(sig);
}

// Children forked without exec (gtest's "fast" death tests) must not share the
// parent's guardian or signal the parent's groups; a forked engine child drops
// its copy of the socket before exec anyway (O_CLOEXEC).
void ResetInForkedChild() {
  const int fd = g_guardian_fd.exchange(-1);
  if (fd >= 0) ::close(fd);
  g_guardian_pid.store(0);
  for (auto& slot : g_groups) slot.store(0);
}

void SendToGuardian(int32_t message) {
  const int fd = g_guardian_fd.load();
  if (fd < 0) return;
  // MSG_NOSIGNAL: a dead guardian must not raise SIGPIPE in moetune;
  // MSG_DONTWAIT: a stopped guardian must not stall moetune.
  if (::send(fd, &message, sizeof message, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN &&
      errno != EINTR) {
    // The guardian is gone: mechanisms 1 and 3 still apply.
    int expected = fd;
    if (g_guardian_fd.compare_exchange_strong(expected, -1)) ::close(fd);
  }
}

// The guardian process (forked, never execs: async-signal-safe calls only).
[[noreturn]] void GuardianMain(int fd) {
  // Its own group: a Ctrl-C to the terminal's foreground group, or a kill of
  // moetune's group, must not end it before it has done its work.
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, "moetune-guard", 0, 0, 0);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig : CleanupSignals()) {
    // Faults stay fatal (ignoring a real SIGSEGV would loop forever).
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
        sig == SIGTRAP || sig == SIGSYS) {
      continue;
    }
    ::sigaction(sig, &ignore, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only the socket stays open: a pipe to another child held here would keep
  // moetune from ever seeing that child's end of output.
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    for (int std_fd = 0; std_fd < 3; ++std_fd) ::dup2(null_fd, std_fd);
  }
  CloseInheritedDescriptors(fd);

  pid_t groups[kMaxGroups] = {};
  for (;;) {
    int32_t message = 0;
    const ssize_t n = ::recv(fd, &message, sizeof message, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: moetune is gone (or the socket broke)
    if (n != static_cast<ssize_t>(sizeof message) || message == 0) continue;
    const pid_t g = message > 0 ? message : -message;
    for (pid_t& slot : groups) {
      if (message > 0 && slot == 0) {
        slot = g;
        break;
      }
      if (message < 0 && slot == g) {
        slot = 0;
        break;
      }
    }
  }
  for (const pid_t g : groups) {
    if (g > 0) ::kill(-g, SIGTERM);
  }
  for (int i = 0; i < kGraceSteps; ++i) {
    bool any = false;
    for (const pid_t g : groups) any = any || (g > 0 && ::kill(-g, 0) == 0);
    if (!any) break;
    SleepMs(kGraceStepMs);
  }
  for (const pid_t g : groups) {
    if (g > 0) ::kill(-g, SIGKILL);
  }
  ::_exit(0);
}

}  // namespace

const std::vector<int>& CleanupSignals() {
  static const std::vector<int> signals = [] {
    // Every signal whose default action ends the process (signal(7)), except
    // SIGKILL and SIGSTOP, which cannot be caught.
    std::vector<int> s = {SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT, SIGBUS,
                          SIGFPE,  SIGUSR1, SIGSEGV,   SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                          SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,   SIGSYS};
#ifdef SIGSTKFLT
    s.push_back(SIGSTKFLT);
#endif
#ifdef SIGPWR
    s.push_back(SIGPWR);
#endif
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) s.push_back(sig);
    return s;
  }();
  return signals;
}

CleanupMechanisms CleanupMechanismsFromEnvironment() {
  CleanupMechanisms m;
  if (EnvSays("none")) {
    m.handler = false;
    m.guardian = false;
  } else if (EnvSays("handler")) {
    m.guardian = false;
  } else if (EnvSays("guardian")) {
    m.handler = false;
  }
  return m;
}

sigset_t BlockCleanupSignals() {
  sigset_t block;
  sigset_t old;
  sigemptyset(&block);
  for (int sig : CleanupSignals()) {
    // Faults must never be blocked (a blocked SIGSEGV from a real fault kills
    // without a handler); they cannot interrupt fork + register anyway.
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP) {
      continue;
    }
    sigaddset(&block, sig);
  }
  pthread_sigmask(SIG_BLOCK, &block, &old);
  return old;
}

void RestoreSignalMask(const sigset_t& old) { pthread_sigmask(SIG_SETMASK, &old, nullptr); }

void RegisterChildGroup(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) break;
  }
  // More than kMaxGroups live children: the destructor and the guardian still
  // kill this one; only the signal-time sweep misses it. Not reachable with
  // moetune's usage.
  SendToGuardian(static_cast<int32_t>(pgid));
}

void UnregisterChildGroup(pid_t pgid) {
  for (auto& slot : g_groups) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) break;
  }
  SendToGuardian(-static_cast<int32_t>(pgid));
}

void EnsureCleanupGuardian() {
  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, ResetInForkedChild); });
  if (g_guardian_fd.load() >= 0) return;
  if (!CleanupMechanismsFromEnvironment().guardian) return;
  std::lock_guard<std::mutex> lock(g_guardian_mutex);
  if (g_guardian_fd.load() >= 0) return;
  int sv[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  // Blocked across fork: the guardian must not run moetune's handler before
  // it has set its own dispositions.
  const sigset_t old = BlockCleanupSignals();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    GuardianMain(sv[1]);
  }
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
  } else {
    g_guardian_pid.store(pid);
    g_guardian_fd.store(sv[0]);
    // Groups registered before the guardian existed (none in moetune's own
    // usage: it starts before the first child) are handed over now.
    for (auto& slot : g_groups) {
      const pid_t g = slot.load();
      if (g > 0) SendToGuardian(static_cast<int32_t>(g));
    }
  }
  RestoreSignalMask(old);
}

pid_t CleanupGuardianPid() { return g_guardian_pid.load(); }

void CloseInheritedDescriptors(int keep) {
  auto close_range = [](unsigned first, unsigned last) {
#ifdef SYS_close_range
    if (first > last || ::syscall(SYS_close_range, first, last, 0U) == 0) return;
#endif
    rlimit rl{};
    const rlim_t limit =
        ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 65536;
    for (rlim_t fd = first; fd <= last && fd < limit && fd < 65536; ++fd) {
      ::close(static_cast<int>(fd));
    }
  };
  if (keep < 3) {
    close_range(3, ~0U);
  } else {
    close_range(3, static_cast<unsigned>(keep) - 1);
    close_range(static_cast<unsigned>(keep) + 1, ~0U);
  }
}

void SignalAllChildGroups(int signal) {
  for (auto& slot : g_groups) {
    const pid_t g = slot.load();
    if (g > 0) ::kill(-g, signal);
  }
}

bool TerminationRequested() { return g_termination_requested.load(); }

int LiveChildGroupCount() {
  int n = 0;
  for (auto& slot : g_groups) n += slot.load() > 0 ? 1 : 0;
  return n;
}

void InstallChildCleanupOnSignals() {
  if (!CleanupMechanismsFromEnvironment().handler) return;
  // An alternate stack lets the handler run after a stack overflow in this
  // (the main) thread; elsewhere the guardian covers that case.
  static char alt_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = OnTerminationSignal;
  sigemptyset(&sa.sa_mask);
  // While the handler runs, no other cleanup signal interrupts it.
  for (int sig : CleanupSignals()) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : CleanupSignals()) {
    struct sigaction current {};
    // A signal moetune inherited as ignored (nohup, a background job) stays
    // ignored: the user asked for that.
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace moetune
