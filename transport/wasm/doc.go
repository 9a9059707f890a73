// Package wasm is the WASI transport: each plugin instance is a WASI
// preview1 command (a .wasm file, typically a Go program built with
// GOOS=wasip1 GOARCH=wasm) run in wazero inside the host process, reached
// over the same line JSON-RPC on stdin/stdout as a subprocess. A Host owns
// one wazero runtime, the modules compiled in it and every instance
// started from it; a Transport starts instances of one module. The why of
// each rule below, and what it costs, is in docs/design.md ("The wasm
// transport").
//
// Stdio. A guest's stdin and stdout are buffers in the host's memory
// (memPipe) holding 64 KiB unread; its stderr goes to Config.Stderr; it
// never gets the host's streams. A Go guest that asks for a non-blocking
// stdin gets one (the stdin shim: wasmmeter.Hook), and waits for input in
// poll_oneoff; its os/signal watcher, which no signal reaches in WASI and
// which would keep its scheduler from ever polling, returns at once
// (signal.go). Wait returns once _start has: nil for exit code 0, else an
// error naming the plugin and the reason, with a *sys.ExitError under it.
//
// Stopping a guest. Every module is metered (package wasmmeter): its code
// calls refuel now and then, where the garbage collector can stop it and a
// guest whose context is done (Kill, Host.Close, a start past its
// deadline) ends. Kill also closes its stdin and breaks its stdout, for a
// guest in a host call; Wait returns promptly after it.
//
// Compiling and caching. A module is compiled once per Host and content
// (its sha256), on the first Start that needs it; concurrent Starts share
// it, and instances are anonymous, so a respawn is an instantiation. Each
// version of a file (package fileversion) is read and hashed once. With
// HostConfig.CacheDir, what was metered, summed, compiled and refused is
// kept there, so the next Host redoes none of it for an unchanged module;
// plugins must not be able to write to it.
//
// Bounds. Nothing a plugin ships holds Start or the Host for ever:
//   - the module file is a regular file of at most MaxModuleSize, checked
//     before and after a non-blocking open, and read through a limit;
//   - Config.Bounds cap the file, each function's size and its blocks
//     before anything is compiled, and the meter refuses a module it would
//     more than double; a module this build has not compiled is compiled
//     first in a compile child (CompileChildArg), killed past its CPU time,
//     memory or wall time; a refusal for time or memory is remembered;
//   - instantiation (the module's start function) is bounded by
//     Config.InstantiateTimeout and the caller's ctx; compiling is not, but
//     the caller's ctx bounds the wait for it and Close cancels it;
//   - _start runs after Start returns: a guest that spins before reading
//     is the caller's to Kill when its handshake deadline passes.
//
// The sandbox. An instance sees only: Config.Dir mounted at its own path
// (read-only unless Config.Writable) and again as "/", so a relative path
// means it in every language; Config.Mounts, the longest serving a path,
// each through an os.Root; never Config.Hide, nor the host's /proc, /sys
// and /dev, known by device and inode rather than spelling (hidingFS,
// childFS), nor anything on a file system that is a window onto the
// host (proc, sysfs, cgroup… mounted anywhere: hostFSes, Linux); no
// device, FIFO or socket; no path over 4096 bytes; a rewound directory is the one
// opened; Config.Env and nothing of the host's; no network; at most
// Config.MemoryLimitMiB of memory and what Config.Budget has left
// (reserved address space: memory.go); the real clocks, a sleep that ends
// with the instance, crypto/rand; imports from wasi_snapshot_preview1
// only. Anything wider is a person's grant, never a manifest's. A trap's
// Wait error is its first line; the stack goes to the log.
package wasm
