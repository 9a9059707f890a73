// Package exec is the transport that runs a plugin as a real subprocess:
// the manifest's entry.command with its args, the environment the caller
// built (host env + entry.env), in the session's working directory. It owns
// the child's whole life: its pipes, its process group, its stop sequence,
// and reaping it.
//
//	t := exec.New(exec.Config{
//		Command: "python3",
//		Args:    []string{root + "/main.py"},
//		Env:     env,
//		Dir:     cwd,
//		Stderr:  pluginLog,
//	})
//	conn, err := t.Start(ctx)
//
// # The wire and the log
//
// The child's stdin and stdout are OS pipes and are the wire, nothing else:
// Conn.Write goes straight to the stdin pipe and Conn.Read straight from the
// stdout pipe, with no copying goroutine in between. Stderr is the plugin's
// log: one goroutine per instance copies it, through a bounded buffer, to
// Config.Stderr (or /dev/null), never to the terminal. That goroutine is
// drained before Wait returns, so a log is complete once Wait has returned.
// (os/exec's own copying is not used: its Wait reaps and drains in one
// call, leaving no moment to end the group's stragglers before draining, so
// a grandchild holding stderr would cost a full WaitDelay on every exit and
// turn a clean exit into ErrWaitDelay. The reaper below bounds the drain
// with a read deadline instead.)
//
// # Process group and shepherd
//
// Every instance leads its own process group (Setpgid), so a ^C at the
// terminal does not reach plugins behind the host's back, and Kill's
// SIGTERM reaches the plugin and the helpers it started. On Linux the
// instance is started under a shepherd (internal/shepherd): the running
// binary re-executed, a child subreaper that starts the plugin with its
// stdio as they are (the wire never passes through it), and that, when
// the plugin exits or is told to stop, SIGKILLs every process the plugin
// left, however it detached (setsid, a double fork, a group of its own),
// before it exits as the plugin did. The instance is then the whole tree.
// Without a shepherd (other systems, no /proc) the instance is the group:
// when the leader exits, whatever it left in the group is SIGKILLed at
// once; anything that escaped the group on purpose is out of reach, and if
// it holds stderr open, Wait stops draining it StopGrace after the leader
// is gone rather than wait for it forever. Either way a plugin that wants
// its helpers to stop cleanly stops them before it exits.
//
// # Stop sequence
//
// Kill stops an instance the way it would want to be stopped, then less
// politely:
//
//  1. close stdin. A plugin's main loop reads stdin, so EOF is the signal it
//     handles anyway: it finishes what it is doing and exits 0. Most
//     plugins are gone here, at once, and Kill returns at once.
//  2. after StopGrace, SIGTERM the group: for a plugin busy in a call and
//     not reading stdin, and for its helpers, which never saw stdin.
//  3. after another StopGrace, SIGKILL the group: nothing survives it.
//     Under a shepherd, the host closes the lifeline instead, and the
//     shepherd SIGKILLs the whole tree (a SIGKILL would end the shepherd
//     first); a shepherd the plugin keeps stopped is SIGKILLed with its
//     group, checked every StopGrace.
//
// The sequence is shepherd.Stop, one rule wherever it runs. So Kill may
// block for up to 2×StopGrace (default 2 s each), plus the shepherd's
// work, or one more StopGrace for a plugin that keeps its shepherd
// stopped; but once the Transport is leaving (Leave: the host is about to
// exit), Kill on a shepherded instance closes stdin, hands steps 2 and 3
// to the shepherd with the plugin's stderr, which the shepherd drains into
// the log from then on, and returns at once, as does Wait: the host exits
// without waiting, and nothing outlives the sequence. It unblocks Read and
// Write at step 1
// (they return ErrKilled), without closing stdout: a child that writes
// while shutting down must not die of SIGPIPE. (That is a read deadline in
// the past; the conn's SetReadDeadline, with which the bridge interrupts a
// read to hand the reading to a waiting caller, never lifts it.) This is
// the sequence of the MCP Go SDK's command transport and hashicorp's
// go-plugin, with StopGrace shortened by tests. A host that must quit
// sooner (the person pressed Ctrl-C twice, or bingo got SIGTERM or SIGHUP)
// shortens it with Transport.Signal, which sends SIGTERM or SIGKILL to
// every live instance's group at once.
//
// # When the host dies
//
// A shepherd holds one end of a socket pair whose other end only the host
// holds: when the host dies, however it dies (SIGKILL, a crash), the
// kernel closes it, and the shepherd ends the tree. Unshepherded children
// on Linux are started with a parent-death signal of SIGKILL (Pdeathsig),
// which reaches the child itself; what it started in its group outlives
// it only if it ignores the end of its pipes. On other systems there is no
// such signal and the stop sequence is all there is.
//
// # Wait and reaping
//
// One reaper goroutine per instance always waits for the child, whether
// or not anyone calls Wait, so no instance is ever a zombie. Wait returns
// once the child is reaped, its group ended and its stderr drained: nil
// for exit status 0, otherwise an error naming the exit status or signal
// (wrapping ErrKilled if the signal was Kill's). The stdout pipe is not
// closed by Wait — output written just before the exit belongs to the
// reader — but when Read reaches its end, or by Kill.
//
// # Finding the program
//
// A bare Command name is searched in the PATH of Config.Env (the child's
// own), falling back to the host's PATH; relative PATH entries are
// ignored, as os/exec ignores them. A missing program fails Start with one
// line naming it (wrapping ErrNotFound).
package exec
