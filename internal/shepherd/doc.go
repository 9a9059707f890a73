// Package shepherd keeps a plugin's whole process tree inside the life of
// its instance, however the plugin's processes detach (setsid, a double
// fork, a group of their own), and ends that tree when the instance ends
// or the host dies by any means, SIGKILL included. It is Linux's; on other
// systems Available is false and the exec transport falls back to its
// process group.
//
// The shepherd is the running binary itself, re-executed through
// /proc/self/exe with a marker in its environment. It makes itself a child
// subreaper (PR_SET_CHILD_SUBREAPER), so every orphan of the plugin's tree
// is re-parented to it rather than to init, starts the plugin, and then
// only waits: the plugin inherits stdin, stdout and stderr, and the
// shepherd lets go of stdin and stdout, so it is never on the wire. When
// the plugin exits, or the lifeline ends, it SIGKILLs every child it has
// and reaps them until none is left (each kill re-parents the next level
// of the tree to it), then exits as the plugin did: the same status, or
// the same signal.
//
// The lifeline is one end of a socket pair, the shepherd's descriptor 3;
// the host holds the other end. The shepherd reports on it whether the
// plugin started; after that, the end of the lifeline means "end the tree
// now": the host closes it to stop the instance at once, and the kernel
// closes it when the host dies, SIGKILL included. Unlike a parent-death
// signal it does not depend on which thread of the host started the
// shepherd. The group signals of the exec transport's stop sequence
// (SIGTERM, and SIGINT or SIGHUP from a terminal) reach the shepherd too;
// it catches and drops every signal but SIGKILL and SIGSTOP, as they are
// the plugin's to act on, and the plugin's own to it do nothing.
//
// A host about to exit hands the stop to the shepherd instead of waiting
// for it (Hand): it closes the plugin's stdin and sends the one order the
// lifeline carries, stop within a grace, with the plugin's stderr and log.
// The shepherd then runs the stop sequence (Stop, the rule the exec
// transport follows when it stops an instance itself: the grace, SIGTERM
// to its group, the grace, the end of the tree), whatever becomes of the
// host, and drains the plugin's stderr into its log until the tree is
// gone.
//
// Every binary that links this package can shepherd, because the marker
// is handled by this package's init, not by a main: a program or test
// binary that re-executes itself can never start a second run of its own
// main by accident. Init also runs before the heavy package initialisation
// of the rest of bingo (json schema compilation): see run_linux.go, and
// docs/performance.md for what a shepherd costs.
//
// A Command with a Sandbox is started confined (sandbox_linux.go): its
// shepherd starts in a user, PID, mount and network namespace of its own,
// as that PID namespace's init, mounts its /proc, and starts the program
// from a thread confined by Landlock (a domain it cannot apply refuses
// the start) and no_new_privs, with no capability and no user namespace
// to make. Where user namespaces are refused, that thread adds a seccomp
// filter of sockets (seccomp_linux.go). Any plugin starts with 0, 1, 2.
//
// What is outside its reach: a plugin not confined runs as the person, so
// it can kill its own shepherd (its orphans then go to init) or keep it
// stopped (the exec transport sends SIGCONT with the end of the lifeline,
// and kills a shepherd it still finds stopped with its group), and what
// it has another service start (systemd-run, at, a daemon) was never in
// its tree: only a cgroup or a container holds those.
package shepherd
