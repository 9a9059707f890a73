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
// # Process group
//
// Every instance leads its own process group (Setpgid), and the instance
// is the whole group. Kill signals the group, so a plugin that runs a shell
// or a helper cannot leave it behind; when the leader exits by itself,
// whatever it left in the group is SIGKILLed at once, so an orphan holds
// neither the pipes nor the files the next instance needs. A plugin that
// wants its helpers to stop cleanly stops them before it exits. Anything
// that escapes the group on purpose (setsid) is outside our reach; if it
// holds stderr open, Wait stops draining it StopGrace after the leader is
// gone rather than wait for it forever.
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
//
// So Kill may block for up to 2×StopGrace (default 2 s each). It unblocks
// Read and Write at step 1 (they return ErrKilled), without closing stdout:
// a child that writes while shutting down must not die of SIGPIPE. (That
// is a read deadline in the past; the conn's SetReadDeadline, with which
// the bridge interrupts a read to hand the reading to a waiting caller,
// never lifts it.) This is
// the sequence of the MCP Go SDK's command transport and hashicorp's
// go-plugin, with StopGrace shortened by tests. A host that must quit
// sooner (the person pressed Ctrl-C twice, or bingo got SIGTERM or SIGHUP)
// shortens it with Transport.Signal, which sends SIGTERM or SIGKILL to
// every live instance's group at once.
//
// # When the host dies
//
// On Linux every child is started with a parent-death signal of SIGKILL
// (Pdeathsig): if the host dies without stopping its plugins — SIGKILL, a
// crash — the kernel kills them. The reaper is gone with the host, so
// what a child started in its own group outlives it only if it ignores
// the end of its pipes; on other systems there is no such signal and the
// stop sequence is all there is.
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
