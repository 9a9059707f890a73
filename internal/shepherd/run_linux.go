package shepherd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// envKey marks a process started by Wrap: its value is the program to
// run, and argv[1:] its argv.
const envKey = "BINGO_SHEPHERD"

// lifelineFd is where Wrap puts the shepherd's end of the lifeline.
const lifelineFd = 3

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h), which the
// syscall package does not name.
const prSetChildSubreaper = 36

func init() {
	path, ok := os.LookupEnv(envKey)
	if !ok {
		return
	}
	// Never passed on: not to the plugin, nor to a bingo that inherited
	// the variable by mistake and goes on as itself.
	_ = os.Unsetenv(envKey)
	var st syscall.Stat_t
	if syscall.Fstat(lifelineFd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return // not started by Wrap
	}
	os.Exit(run(path, os.Args[1:]))
}

// run is the shepherd: it starts the plugin, waits for it or for the end
// of the lifeline, ends every process left in its tree, and returns the
// plugin's exit code, or dies of the plugin's signal.
func run(path string, argv []string) int {
	lifeline := os.NewFile(lifelineFd, "lifeline")
	syscall.CloseOnExec(lifelineFd) // the plugin must not hold it
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		// Linux before 3.4: the plugin still runs, and its group still
		// ends with it, but detached processes escape.
		fmt.Fprintf(os.Stderr, "bingo: cannot keep the plugin's detached processes (prctl: %v)\n", errno)
	}
	// Caught, not ignored: an ignored signal stays ignored across exec,
	// and the plugin must get the default dispositions.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		// Should the shepherd itself be killed, the plugin goes with it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(lifeline, "%d\n", int(errno))
		return 127
	}
	if _, err := lifeline.Write([]byte("\n")); err != nil {
		// The host is gone already: nothing to run the plugin for.
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// The wire is the plugin's alone: once the plugin is gone, its reader
	// sees the end of stdout without waiting for the shepherd.
	_ = syscall.Close(0)
	_ = syscall.Close(1)

	stop := make(chan struct{})
	go func() {
		// The host never writes after the report: whatever ends this read
		// (the end of the socket) is the order to stop.
		_, _ = lifeline.Read(make([]byte, 1))
		close(stop)
	}()
	return exitAs(shepherd(pid, stop, sigs))
}

// shepherd waits until the plugin has exited or stop is closed, then
// SIGKILLs every child until it has none, and returns the plugin's status.
// Every wait happens here, in one goroutine: a pid is signalled only while
// it is an unreaped child, so it can never be a reused one.
func shepherd(plugin int, stop <-chan struct{}, sigs <-chan os.Signal) syscall.WaitStatus {
	var status syscall.WaitStatus
	ending, pluginDone := false, false
	self := os.Getpid()
	// While ending, the tree is rescanned at this pace as well as at each
	// SIGCHLD: a process re-parented to us between a scan and a wait
	// would otherwise wait for a SIGCHLD that never comes.
	var tick <-chan time.Time
	for {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD: the plugin is reaped and nothing is left
				return status
			}
			if pid == 0 {
				break
			}
			if pid == plugin {
				status, pluginDone = ws, true
			}
		}
		if ending || pluginDone {
			// Only now, with children left, is /proc read: a plugin that
			// leaves nothing costs no scan.
			for _, pid := range children(self) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if tick == nil {
				t := time.NewTicker(10 * time.Millisecond)
				defer t.Stop()
				tick = t.C
			}
		}
		select {
		case <-stop:
			ending, stop = true, nil
		case <-sigs: // SIGCHLD, or a group signal that is the plugin's
		case <-tick:
		}
	}
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid ...: the name may hold anything, so the
		// fields are counted from its last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(string(f[1])); err == nil && ppid == pid {
				kids = append(kids, p)
			}
		}
	}
	return kids
}

// exitAs returns the plugin's exit code, or, if a signal ended it, ends
// the shepherd with the same signal, so that the host's wait sees what the
// plugin's would have.
func exitAs(ws syscall.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	// The plugin's core file, if any, is the one that matters.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	// The Go runtime handles most signals itself (and ignores a SIGSEGV
	// sent by kill): the kernel's default action is what ends a process
	// with that signal.
	var act [8]uint64 // a zero sigaction: SIG_DFL, no flags, nothing masked
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(&act)), 0, sigsetSize, 0, 0); errno == 0 || sig == syscall.SIGKILL {
		_ = syscall.Kill(os.Getpid(), sig)
	}
	// A signal whose default is not to end the process (no plugin dies of
	// one), or a kernel that refused: the shell's convention.
	return 128 + int(sig)
}

// sigsetSize is the kernel's sizeof(sigset_t) for rt_sigaction: 64
// signals on every Linux port but MIPS, where the call fails and exitAs
// falls back to an exit code.
const sigsetSize = 8
