// Package wasm is the WASI transport: each plugin instance is a WASI
// preview1 command (a .wasm file, typically a Go program built with
// GOOS=wasip1 GOARCH=wasm) run in wazero inside the host process, reached
// over the same line-JSON-RPC on stdin/stdout as a subprocess.
//
// The package owns the wazero runtime (one per Host), compiling and
// caching modules, the sandbox each instance runs in, and the instance
// lifecycle behind transport.Conn.
//
//	h, err := wasm.NewHost(ctx, wasm.HostConfig{CacheDir: cacheDir})
//	...
//	defer h.Close(ctx)
//	t := h.Transport(wasm.Config{Path: root + "/plugin.wasm", Name: "wordcount", Dir: cwd, Stderr: log})
//	conn, err := t.Start(ctx) // then speak JSON-RPC lines over conn
//
// # Stdio
//
// A metered guest's stdin and stdout are bounded buffers in the host's
// memory (memPipe, pipe.go); its stderr goes to Config.Stderr; it never
// gets the host's streams. _start runs on a goroutine owned by the Conn,
// and Wait returns after it has returned: nil for exit code 0, otherwise
// an error naming the plugin and the reason (an exit code, with the
// guest's "panic:" or "fatal error:" line when it printed one; a trap;
// ErrMemoryLimit; ErrKilled). The exit code is a *sys.ExitError under the
// error, for errors.As.
//
// A Go guest asks for a non-blocking stdin, so that a reader waiting for
// the next request waits in poll_oneoff and its other goroutines keep
// running: a guest whose every read blocks its only thread, and that reads
// on one goroutine while another answers (pluginkit does), never answers
// at all. wazero grants that mode only to an *os.File, so the meter routes
// the guest's fd_fdstat_get and fd_fdstat_set_flags through a shim that
// keeps fd 0's mode beside the buffer; poll_oneoff then waits on the
// buffer, a parked goroutine that the host's next write readies. An OS
// pipe was the stdin before: its waits were in poll(2) on an OS thread,
// and waking that thread for each request cost about a quarter of a call.
// A guest that never asks for non-blocking reads waits in fd_read, as on
// a pipe. An idle guest sees EOF only when Close ends the input. Either
// buffer holds 64 KiB unread, as a pipe does; past that a write waits.
// A guest's write to stdout also waits until the host has read it, unless
// more input is waiting for the guest (memPipe says why). An unmetered
// guest (HostConfig.TerminationChecks) has an OS pipe for stdin, and its
// stdout always waits, as guests ran before the meter.
//
// # Stopping a guest: the meter, and why Kill closes stdin too
//
// A guest stuck in a loop never calls back into the host. Left alone it
// could not be stopped at all, and worse, the next garbage collection of
// the host would wait for it to reach a safe point, which it never does,
// so the whole host would freeze. wazero's answer, WithCloseOnContextDone,
// leaves machine code for Go at every loop header to look at the context,
// which multiplies the work of a Go guest (whose every function begins
// with a loop) by three or more. So every module is metered instead
// (package wasmmeter): before it is compiled, a countdown is inserted at each
// function entry, each loop header and every thousand straight-line
// instructions, and bulk memory operations are charged by their size; when
// it runs out, the guest calls out to the host (refuel), about once per
// thousand checks. That call is where the host's garbage collector can
// stop the guest's goroutine, and where a guest whose context is done
// (Kill, Host.Close, a start that took too long) is ended: well under a
// millisecond after the cancel, for a loop or for recursion, which
// wazero's checks at loop headers alone would not stop.
//
// The meter runs only in wasm code. A guest waiting for stdin is inside a
// host call (poll or read on its stdin), which knows nothing of the
// context, so Kill also closes the host's end of stdin; the wait returns,
// the guest resumes wasm code, and its next refuel stops it. Kill breaks
// the stdout pipe as well, for a guest blocked writing an answer no one
// reads; what the guest wrote before the kill is still read, then the
// read fails. Kill is idempotent and Wait returns promptly after it. Host.Close
// kills every live instance before closing the runtime.
//
// # Compilation and the cache
//
// A module is compiled lazily, on the first Start that needs it, once per
// Host and module content: the key is the sha256 of the file's bytes, so
// plugins that ship the same module at different paths share one
// compilation and one compiled module, and a changed file is compiled
// afresh. Each version of a file (identity, mtime, size) is read and
// hashed once; a later Start of an unchanged file only stats it.
// Concurrent Starts share the read and the compilation. Instances are
// anonymous (WithName("")), so any number of instances of one module run
// at once, and a respawn is an instantiation (milliseconds), not a
// compilation.
//
// One CompileModule call per content is also what keeps the disk cache
// safe: wazero publishes a module loaded from its disk cache to concurrent
// callers of the same module before the module is ready (wazero issue
// #2547), and an instance of the unready module panics the host when it
// calls a function. Two compilations of one content never run at once in a
// Host, so none can see the other's unready module. (Hosts do not share
// wazero's in-memory table: each has its own CompilationCache.)
//
// With HostConfig.CacheDir set, the metered module is kept there too
// (metered-v2/, by the original's sha256, with a checksum), and compiled
// code is also kept on disk by wazero (keyed by module content and wazero
// version), so a new Host, i.e. the next session, skips compilation: for a Go guest a few seconds cold
// on a slow machine, tens of milliseconds warm (decoding and validating
// the module, which wazero does on every load, is most of that). The
// original's sha256 is kept as well (sums-v2/, by path and file version,
// with a checksum; see package internal/fileversion), so that a new Host
// starting an unchanged module goes from its stat to the kept metered
// module without reading or hashing the original: only on Linux, where a
// file's version includes its status-change time, and only for a file
// that had gone unchanged for two seconds when it was read. A record that
// does not match the file costs a read, never another module's code. The
// directory must not be writable by plugins; the host keeps it under
// ~/.bingo/data/cache/wasm.
//
// # Bounds on start-up
//
// Nothing a plugin ships can hold Start, or the Host, for ever:
//   - The module file must be a regular file of at most MaxModuleSize
//     (256 MiB). It is checked before it is opened, so a FIFO or a device
//     such as /dev/zero is refused without being opened; opened
//     non-blocking, so opening a FIFO swapped in meanwhile cannot wait for
//     a writer; checked again once open; and read through a LimitReader,
//     so a file that grows is refused at the cap, not read to the end.
//     Each refusal is one line naming the plugin and the file.
//   - Instantiation runs the module's start function (its wasm start
//     section), the module's own code, before Start returns. It is bounded
//     by Config.InstantiateTimeout (default DefaultInstantiateTimeout,
//     10 s; the bingo host passes deadlines.initialize) and by the
//     caller's ctx. Either ending stops a start function that loops, by
//     the same context check that stops a spinning guest (below), and
//     Start returns promptly.
//   - Compiling is not bounded by InstantiateTimeout: it is the host's
//     work, done once per module content and then cached, and a cold
//     compile of a Go guest can take longer than a handshake deadline on
//     a slow machine. It is bounded by Config.Bounds instead (below). The
//     caller's ctx bounds the wait for it (a Ctrl-C ends the wait). The
//     compilation itself outlives a caller who gives up, so the next
//     Start finds it done, but not the Host: Close cancels it (wazero
//     checks between functions, and a compile child is killed) and waits
//     for it. A read of a module file is not waited for; it ends, unused,
//     once the read does.
//   - _start runs after Start has returned; a guest that loops before
//     reading its stdin is the caller's to stop when its handshake
//     deadline passes (the bingo bridge does, with Kill).
//
// # Bounds on compilation
//
// wazero's compile time and memory grow faster than the module: with the
// square of the blocks and loops in a function, for one. A module that
// costs minutes or gigabytes to compile must cost the host neither, and
// no check made up front catches every such module, so Config.Bounds
// (DefaultBounds where zero) hold it two ways:
//   - Cheap caps, checked as the module is read and metered, before
//     anything is compiled: the file's size (ModuleMiB), each function's
//     size (FunctionKiB) and its blocks, ifs and loops (BlocksPerFunction,
//     a loop counting four, for the if and call its check adds). The
//     meter also refuses a module it would more than double (plus a
//     KiB): a loop every few bytes, each given a check of nineteen.
//   - A module that this build of the host has not compiled before (no
//     mark for it in compiled-v1/ under the cache directory, in the
//     build's own directory, as wazero keeps its code by its version) is
//     compiled first in a compile child: the program
//     HostConfig.Compiler, by default this executable, run with
//     CompileChildArg (CompileChild is its main). It writes the compiled
//     code to the disk cache; the Host then compiles the same module,
//     which loads from the cache. CompileModule cannot be interrupted,
//     but a process can. On Linux the Host reads the child's CPU time and
//     resident memory every 20 ms and kills it past CompileTime of CPU
//     or CompileMemoryMiB; CPU time, because on a busy machine a module
//     that is fine can take many times its CPU time to compile, so the
//     wall time is bounded only at CompileWall, by default five times
//     CompileTime. Elsewhere the child is killed at CompileTime (or
//     CompileWall) of wall time. A Host runs one child at a time: each
//     uses every core, and their memory would add up. Only a Host with a
//     CacheDir has a child: without one the compiled code could not come
//     back, and the cheap caps alone apply.
//
// A module refused for its CPU time or memory is remembered by its sha256
// (refused-v1/ in the cache directory: the bound and the bounds it failed
// under), so that a later Host refuses it under the same or narrower
// bounds without compiling it, and tries again under wider ones. One that
// ran out of wall time is not (the machine was busy, and the module may
// be fine), unless the wall time was the caller's own CompileWall. Every refusal is a *BoundError, one line that names the bound
// and, with Bounds.Key, the setting that raises it.
//
// # The sandbox
//
// An instance sees exactly this and nothing else:
//   - Files: only Config.Dir, mounted at its own absolute path (paths mean
//     the same inside and out; it is also the guest's working directory),
//     read-only unless Config.Writable. The mount goes through an os.Root:
//     wazero's own directory mount refuses ".." but follows symbolic links
//     anywhere, so a link in Dir pointing outside would otherwise read any
//     host file. With os.Root, links are followed only while they stay in
//     Dir. Absolute paths outside Dir match no mount. Config.Mounts add
//     directories the same way, each at its own path and through its own
//     os.Root, read-only unless the mount says writable (the bingo host
//     mounts the plugin's data directory read-write and its pluginRoot
//     read-only). Nested mounts are served by the longest: a writable
//     data directory inside a read-only Dir is writable, and only it.
//     Config.Hide (the bingo host passes ~/.bingo) is never seen: a mount
//     that holds it serves it as not there, never following a link in
//     the directories on the way to it (hide.go).
//   - Environment: only Config.Env, never the host's (API keys live there).
//   - Network: none. WASI preview1 has no socket creation, and no sockets
//     are handed in.
//   - Memory: at most Config.MemoryLimitMiB (default 256). The cap is
//     per-instance (a memory allocator that refuses to grow past it),
//     because the runtime-wide wazero limit would force one cap on every
//     plugin. A guest over it dies (a Go guest prints "fatal error: out of
//     memory" and exits 2) and the host carries on. A limit below the
//     module's declared minimum fails at Start and says so.
//   - Clocks and randomness: the real wall clock, monotonic clock and
//     sleep, and crypto/rand. (wazero's defaults are fake, deterministic
//     ones; plugins need real time and unpredictable randomness.)
//
// Anything wider than these defaults (a writable mount, more memory) is a
// person's grant in settings, never a manifest's.
package wasm
