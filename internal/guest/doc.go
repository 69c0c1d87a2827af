// Package guest runs a job's command as a guest of the daemon: a clean
// environment, a process group of its own, and a supervisor that ends the
// command's whole process tree when leadership ends (at the latest at the
// local lease deadline) and when the daemon dies.
//
// # How
//
// Run starts a supervisor: the daemon's own binary (/proc/self/exe) in a
// hidden mode that main enters through MaybeSupervise, with a report pipe
// and a control pipe. The supervisor makes itself a child subreaper (every
// orphaned descendant of the command is reparented to it, not to init),
// asks for SIGHUP when the daemon dies (PR_SET_PDEATHSIG, then checks
// getppid against the daemon's pid, for a daemon that died first) and also
// takes EOF on the control pipe as the daemon's death. It starts the
// command in a new process group, with SIGKILL as the command's own
// parent-death signal. Then:
//
//   - "term" (Run's context ended): SIGTERM to the group and to every
//     descendant, in the group or not.
//   - "kill" (min(Grace, deadline) after that), the lease deadline (which
//     the supervisor keeps itself; Run passes on every renewal), or the
//     daemon's death: SIGKILL to the group and every descendant, repeated
//     until the supervisor has no child left.
//   - The command exits: what it left running gets SIGTERM, and SIGKILL
//     after Grace (or sooner, as above), as systemd treats a service's
//     remaining processes. Run returns only after that.
//
// Descendants are found by their parent chain in /proc; a child is
// signalled by pid (only its parent, the supervisor, can reap it, so the
// pid cannot be reused meanwhile), a deeper one through a pidfd checked
// against the start time the scan saw. Once the supervisor has no child
// (wait4 says ECHILD), it has no descendant either, and it reports the
// command's status and exits; Run returns after that.
//
// # Guaranteed, on Linux
//
//   - The command's environment is PATH, HOME, LANG and TZ when the daemon
//     has them, the names in Config.AllowEnv (which CheckEnvName vets: no
//     REDIS_*, JOBS_TOKEN, ADMIN_TOKEN or LOCKWORKER_*), and the job's
//     LOCKWORKER_* variables. Nothing else of the daemon's.
//   - When Run's context ends, the tree gets SIGTERM, and SIGKILL at
//     min(now+Grace, deadline()). SIGKILL is sent at the deadline at the
//     latest, even if the daemon is frozen (SIGSTOP, a pause): the
//     supervisor keeps its own timer.
//   - Nothing the command started outlives it by more than Grace: when it
//     exits, what is left gets SIGTERM, then SIGKILL. That includes
//     descendants that left the group, called setsid or daemonized: they
//     are reparented to the supervisor, or reached through a pidfd.
//   - kill -9 of the daemon: the supervisor kills the whole tree at once
//     (SIGKILL, no grace: the attempt is lost anyway, and the lease may be
//     about to pass to another replica).
//   - Run returns only when the tree is gone, or, if the supervisor cannot
//     end it within a second of SIGKILL, after killing the supervisor.
//
// # Not guaranteed
//
//   - Death before the deadline: SIGKILL is sent at the deadline, and the
//     process is gone a few milliseconds later, more on an overloaded host
//     (BenchmarkKillAtDeadline). The lease's drift allowance (the local
//     deadline is earlier than the lock's expiry in Redis) must cover that.
//   - If the supervisor itself is killed with SIGKILL (the OOM killer, an
//     operator's kill -9 of its pid), only the command dies (its
//     parent-death signal); what it started is orphaned. Run then reports
//     that the supervisor ended without a report.
//   - Processes started on the command's behalf outside its tree (by
//     systemd-run, docker, at, ssh to another host) are not descendants.
//   - A process in uninterruptible sleep (D state) dies when it leaves it;
//     a fork bomb may outrun the sweeps. A cgroup, or a container's PID
//     namespace (all of it dies with its init), bounds both.
//   - Off Linux there is no supervisor: the command alone gets SIGTERM and
//     is killed at the same time, and nothing covers the daemon's death or
//     the command's descendants.
package guest
