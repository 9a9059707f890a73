// Package exec is the transport that runs a plugin as a real subprocess:
// the manifest's entry.command with its args, the environment the caller
// built (host env + entry.env), in the session's working directory. It owns
// the child's whole life: its pipes, its process group, its stop sequence,
// and reaping it.
//
//	t := exec.New(exec.Config{Command: "python3", Args: []string{root + "/main.py"}, Env: env, Dir: cwd, Stderr: pluginLog})
//	conn, err := t.Start(ctx)
//
// # The wire and the log
//
// The child's stdin and stdout pipes are the wire, with no copying
// goroutine between. Stderr is the plugin's log: one goroutine copies it to
// Config.Stderr (never the terminal), drained before Wait returns (not
// os/exec's copying: docs/design.md, "transport/exec", says why).
//
// # Process group and shepherd
//
// Every instance leads its own process group (Setpgid). On Linux it runs
// under a shepherd (internal/shepherd), a child subreaper that ends every
// process the plugin left, however it detached; the instance is the whole
// tree. Without one (other systems, no /proc) the instance is the group.
// docs/design.md ("transport/exec") says what each reaches and why.
//
// # Stop sequence
//
// Kill stops an instance the way it would want to be stopped, then less
// politely:
//
//  1. close stdin (the EOF a plugin's main loop handles anyway);
//  2. after StopGrace, SIGTERM the group;
//  3. after another StopGrace, SIGKILL the group, or under a shepherd
//     close its lifeline, so it ends the whole tree.
//
// The sequence is shepherd.Stop, one rule wherever it runs: Kill blocks
// up to 2×StopGrace, but a Transport that is leaving (Leave) hands steps 2
// and 3 to the shepherd and returns at once. Kill unblocks Read and Write
// at step 1 (ErrKilled) without closing stdout; Transport.Signal shortens
// the sequence for a host that must quit now. The details, and whose
// sequence this is: docs/design.md ("transport/exec").
//
// # When the host dies
//
// A shepherd ends the tree when the host dies, however it dies (the end of
// its lifeline); an unshepherded child on Linux gets SIGKILL as its
// parent-death signal (docs/design.md, "transport/exec").
//
// # Wait and reaping
//
// One reaper goroutine per instance always waits for the child, so no
// instance is a zombie. Wait returns once the child is reaped, its group
// ended and its stderr drained: nil for exit status 0, else an error
// naming the status or signal (wrapping ErrKilled for Kill's). Wait leaves
// stdout open: what was written before the exit is the reader's.
//
// # Finding the program
//
// A bare Command is searched in Config.Env's PATH, then the host's
// (relative entries ignored); a missing one fails Start (ErrNotFound).
package exec
