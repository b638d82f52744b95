#pragma once
/// No engine process outlives moetune: the registry of live child process
/// groups and the three mechanisms that empty it when moetune ends abnormally.
///
/// Every child runs in its own process group (ChildProcess, subprocess.h), and
/// a wrapper script's own children (a loader, a helper it forks) inherit that
/// group. The groups are registered here from fork until just before their
/// leader is reaped (so a group id is never signalled after the kernel could
/// have reused it). Then:
///
///  1. A signal handler for every signal whose default action ends the process
///     (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2, SIGALRM, SIGPIPE, SIGXCPU,
///     SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS, the crash signals
///     SIGILL/SIGTRAP/SIGABRT/SIGBUS/SIGFPE/SIGSEGV/SIGSTKFLT, and the real-time
///     signals) sends SIGTERM to every group, waits at most one second for the
///     group leaders to exit (a leader that is already a zombie counts as
///     exited: nobody is waited on in vain), sends SIGKILL to every group, then
///     re-raises the signal with its default action so that moetune's exit
///     status is the usual one (130 after Ctrl-C in a shell). It uses only
///     async-signal-safe calls. A signal that moetune inherited as ignored
///     (nohup) stays ignored.
///  2. A cleanup guardian for what no handler can catch (SIGKILL, a kernel
///     OOM kill, a crash on a corrupted stack): a small process forked once, at
///     the first child, that holds the reading end of a socket whose only
///     writer is moetune. moetune tells it each group as it registers and
///     unregisters it. When moetune dies in any way, the kernel closes the
///     socket; the guardian reads end-of-file, sends SIGTERM then SIGKILL to
///     the groups still registered, and exits. It ignores terminal and
///     termination signals and runs in its own process group, so a Ctrl-C to
///     the terminal does not take it first; its lifetime is bounded by
///     moetune's plus about one second, so it cannot be left behind itself.
///  3. Each direct child also gets PR_SET_PDEATHSIG(SIGKILL).
///
/// Limits (documented in docs/cli.md, "Processes"): a descendant that leaves
/// its process group (setsid, setpgid: a daemonizing tool) is outside every
/// group moetune knows; SIGKILL of the guardian itself (it is a separate
/// process) disables mechanism 2 for that run; PR_SET_PDEATHSIG fires when the
/// *thread* that forked the child ends, so children are started and waited
/// for on the same thread; and if moetune is SIGKILLed, the group ids are
/// signalled within a second of its death, when a reused id would need the
/// whole pid space to wrap around in that second.

#include <signal.h>
#include <sys/types.h>

#include <vector>

namespace moetune {

/// Adds a child's process group (called with the cleanup signals blocked).
void RegisterChildGroup(pid_t pgid);
/// Removes it; must be called before the group's leader is reaped.
void UnregisterChildGroup(pid_t pgid);

/// Starts the cleanup guardian if it is not running (and not disabled).
void EnsureCleanupGuardian();
/// The guardian's pid, 0 when there is none (tests leave it out of their
/// process counts: it is moetune's, not something a run started).
pid_t CleanupGuardianPid();

/// Installs the signal handler of mechanism 1. Called once by main(); safe to
/// call more than once.
void InstallChildCleanupOnSignals();

/// The signals the handler is installed for.
const std::vector<int>& CleanupSignals();

/// Blocks every cleanup signal in the calling thread (fork + register must not
/// be interrupted); returns the previous mask for RestoreSignalMask.
sigset_t BlockCleanupSignals();
void RestoreSignalMask(const sigset_t& old);

/// True once moetune received a cleanup signal (set by the handler).
bool TerminationRequested();

/// Number of child groups currently registered as live (for tests).
int LiveChildGroupCount();

/// Sends `signal` to every registered child group (async-signal-safe).
void SignalAllChildGroups(int signal);

/// Closes every file descriptor from 3 up except `keep` (-1: none), in a
/// forked child before exec: a child must not inherit moetune's pipes and
/// sockets (they would keep another child's output open, or a test harness
/// waiting). Async-signal-safe.
void CloseInheritedDescriptors(int keep);

/// Which mechanisms are on. The environment variable MOETUNE_CHILD_CLEANUP
/// ("all", the default; "handler"; "guardian"; "none") turns them off for
/// the tests that prove each one is needed: with "none", a grandchild of the
/// engine survives moetune's death, which is what the tests must detect.
struct CleanupMechanisms {
  bool handler = true;
  bool guardian = true;
};
CleanupMechanisms CleanupMechanismsFromEnvironment();

}  // namespace moetune
