package shepherd

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// This file is the shepherd's side. Its imports are kept to what package
// os needs anyway, and os/signal, which needs little more: Go initialises
// packages in import-path order as soon as their imports are, so with
// nothing more this package's init runs before almost every other package
// of the binary, and a shepherd pays for little of bingo's start-up.

// envKey marks a process started by Wrap: its value is the program to
// run, and argv[1:] its argv.
const envKey = "BINGO_SHEPHERD"

// lifelineFd is where Wrap puts the shepherd's end of the lifeline.
const lifelineFd = 3

// Linux constants the syscall package does not name.
const (
	prSetChildSubreaper = 36        // prctl PR_SET_CHILD_SUBREAPER
	pAll                = 0         // waitid P_ALL
	wNowait             = 0x1000000 // waitid WNOWAIT
	sigDfl              = 0         // SIG_DFL
	sysCloseRange       = 436       // close_range, the same number on every port
	closeRangeCloexec   = 1 << 2    // CLOSE_RANGE_CLOEXEC
)

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
	// The plugin must hold neither the lifeline nor any descriptor the
	// host inherited without close-on-exec (from a terminal or an IDE):
	// Landlock does not check a descriptor already open.
	closeOnExec()
	// No signal sent to the shepherd ends it but SIGKILL (or stops it
	// but SIGSTOP): the Go runtime would end it on SIGTERM, SIGINT and
	// SIGHUP, and dump and exit on SIGQUIT, SIGABRT and a few more,
	// skipping the end of the tree, the cleanup and the report. The group
	// signals of the stop sequence, and a terminal's, are the plugin's to
	// act on; and a plugin may send any signal to its shepherd, its
	// namespace's init, where Landlock is older than ABI 6. Every one is
	// caught and dropped, not ignored: a caught signal is back to its
	// default across exec, so the plugin starts with the defaults, which
	// an ignored one would not.
	signal.Notify(make(chan os.Signal, 1))
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		// Linux before 3.4: the plugin still runs, and its group still
		// ends with it, but detached processes escape.
		_, _ = os.Stderr.WriteString("bingo: cannot keep the plugin's detached processes (prctl: " + errno.Error() + ")\n")
	}
	var pid int
	var err error
	cleanup := func() {}
	policy, confined := os.LookupEnv(sandboxKey)
	if confined {
		_ = os.Unsetenv(sandboxKey)
		pid, cleanup, err = startConfined(path, argv, os.Environ(), decodeSandbox(policy))
	} else {
		pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Env:   os.Environ(),
			Files: []uintptr{0, 1, 2},
			// Should the shepherd itself be killed, the plugin goes with it.
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
	}
	if err != nil {
		cleanup()
		if se, ok := err.(*os.SyscallError); ok {
			err = se.Err
		}
		errno, ok := err.(syscall.Errno)
		if !ok {
			errno = syscall.EINVAL
		}
		_, _ = lifeline.Write(itoa(int(errno), '\n'))
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

	kill, exited := make(chan struct{}), make(chan struct{})
	var d drainer
	go listen(kill, exited, &d)
	reapable, next := make(chan struct{}), make(chan struct{}, 1)
	go watch(reapable, next)
	status := shepherd(pid, kill, exited, reapable, next)
	d.finish()
	cleanup()
	if os.Getpid() == 1 {
		// An init cannot die of the program's signal: see Exited.
		_, _ = lifeline.Write(append([]byte{'X'}, itoa(int(status), '\n')...))
	}
	return exitAs(status)
}

// closeOnExec marks every descriptor from 3 up close-on-exec, so the
// plugin starts with its stdin, stdout and stderr only; the shepherd
// keeps them all, as it starts nothing else. close_range (Linux 5.11),
// or where it is missing, each descriptor /proc/self/fd lists.
func closeOnExec() {
	if _, _, errno := syscall.RawSyscall(sysCloseRange, lifelineFd, uintptr(^uint32(0)), closeRangeCloexec); errno == 0 {
		return
	}
	closeOnExecListed()
}

// closeOnExecListed is closeOnExec where close_range is missing.
func closeOnExecListed() {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		if fd, ok := atoi(name); ok && fd >= lifelineFd {
			syscall.CloseOnExec(fd)
		}
	}
}

// listen reads the host's orders on the lifeline until it ends, and
// carries them out. There is one: "s<grace in ms>\n", stop the plugin by
// the stop sequence (Stop) within that grace, its stdin being closed
// already; it may come with descriptors, the plugin's stderr and then its
// log, from a host that is about to exit. Until a stop order, the end of
// the lifeline (the host closed it, or died) closes kill: end the tree
// now. After one, the sequence runs to its end whatever becomes of the
// host. exited is closed once the plugin has been reaped; d drains what
// is handed.
func listen(kill chan<- struct{}, exited <-chan struct{}, d *drainer) {
	var killOnce sync.Once
	end := func() { killOnce.Do(func() { close(kill) }) }
	var order []byte
	stopping := false
	buf, oob := make([]byte, 64), make([]byte, syscall.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(lifelineFd, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if files := handed(oob[:oobn]); len(files) > 0 {
			d.start(files)
		}
		if n <= 0 || err != nil {
			if !stopping {
				end()
			}
			return
		}
		order = append(order, buf[:n]...)
		for {
			i := 0
			for i < len(order) && order[i] != '\n' {
				i++
			}
			if i == len(order) {
				break
			}
			ms, ok := 0, len(order) > 1 && order[0] == 's'
			if ok {
				ms, ok = atoi(string(order[1:i]))
			}
			order = order[i+1:]
			if !ok || stopping {
				continue
			}
			stopping = true
			go Stop(time.Duration(ms)*time.Millisecond, func(d time.Duration) bool {
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-exited:
					return true
				case <-t.C:
					return false
				}
			}, func(sig syscall.Signal) {
				if sig == syscall.SIGKILL {
					end()
					return
				}
				// The group the exec transport starts the shepherd in, as
				// its leader: the plugin and the helpers in its group. (Not
				// the plugin's pid alone: only the reaper may signal a
				// child, which it knows to be unreaped.)
				if syscall.Getpgrp() == os.Getpid() {
					_ = syscall.Kill(-os.Getpid(), sig)
				}
			})
		}
	}
}

// handed returns the descriptors passed in a control message, as files.
func handed(oob []byte) []*os.File {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "handed"))
		}
	}
	return files
}

// drainCap bounds what a shepherd writes to a plugin's log: the host's
// rotation does not reach it.
const drainCap = 1 << 20

// drainer copies the plugin's stderr, once a host on its way out has
// handed it over, to the plugin's log: a plugin still stopping when the
// host exits can write its log, and never dies of writing it (SIGPIPE).
type drainer struct {
	mu   sync.Mutex
	done chan struct{} // nil until a drain starts; closed once it ends
}

// start drains files (the plugin's stderr, then its log if handed), unless
// a drain runs already.
func (d *drainer) start(files []*os.File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done != nil {
		for _, f := range files {
			_ = f.Close()
		}
		return
	}
	done := make(chan struct{})
	d.done = done
	go func() { drain(files); close(done) }()
}

// finish waits for a drain, if one runs, once the tree is gone: the pipe
// ends when the shepherd closes its own stderr, unless something that
// left the tree holds it, which is not waited for long.
func (d *drainer) finish() {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	if done == nil {
		return
	}
	_ = syscall.Close(2)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// drain copies the plugin's stderr (files[0]) to its log (files[1], if
// handed) until every writer of the pipe is gone. Past drainCap, or
// should the log fail, it reads on and drops what it reads.
func drain(files []*os.File) {
	stderr, log := files[0], (*os.File)(nil)
	if len(files) > 1 {
		log = files[1]
	}
	buf := make([]byte, 32<<10)
	written := 0
	for {
		n, err := stderr.Read(buf)
		if n > 0 && log != nil && written+n <= drainCap {
			if _, werr := log.Write(buf[:n]); werr != nil {
				log = nil
			}
			written += n
		}
		if err != nil {
			return
		}
	}
}

// shepherd waits until the plugin has exited or stop is closed, then
// SIGKILLs every child until it has none, and returns the plugin's status.
// It closes exited once the plugin is reaped.
// Every reap happens here, in one goroutine: a pid is signalled only while
// it is an unreaped child, so it can never be a reused one.
func shepherd(plugin int, stop <-chan struct{}, exited chan<- struct{}, reapable <-chan struct{}, next chan<- struct{}) syscall.WaitStatus {
	var status syscall.WaitStatus
	ending, pluginDone, seen := false, false, false
	self := os.Getpid()
	// While ending, the tree is rescanned at this pace as well as at each
	// reapable child: a process re-parented to us between a scan and a
	// wait would otherwise wait for an exit that never comes.
	var tick <-chan time.Time
	for {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
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
				close(exited)
			}
		}
		if seen {
			next <- struct{}{} // what watch saw is reaped: it may look again
			seen = false
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
		case _, ok := <-reapable:
			if !ok {
				reapable = nil
			}
			seen = ok
		case <-tick:
		}
	}
}

// watch sends on reapable each time a child can be reaped, without reaping
// it (WNOWAIT: reaping stays with shepherd), and then waits for next
// before it looks again. It closes reapable once there is no child.
func watch(reapable chan<- struct{}, next <-chan struct{}) {
	var info [128]byte // siginfo_t, unread
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|wNowait, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			close(reapable)
			return
		}
		reapable <- struct{}{}
		<-next
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
		p, ok := atoi(e.Name())
		if !ok {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		if ppid, ok := statPPID(b); ok && ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// statPPID returns the parent's pid from the text of /proc/<pid>/stat:
// "pid (comm) state ppid ...". The name may hold anything, so the fields
// are counted from its last ')'.
func statPPID(stat []byte) (int, bool) {
	i := len(stat) - 1
	for i >= 0 && stat[i] != ')' {
		i--
	}
	if i < 0 {
		return 0, false
	}
	rest := stat[i+1:] // " S 1234 ..."
	start, field := -1, 0
	for j := 0; j <= len(rest); j++ {
		if j < len(rest) && rest[j] != ' ' {
			if start < 0 {
				start = j
			}
			continue
		}
		if start >= 0 {
			if field++; field == 2 {
				return atoi(string(rest[start:j]))
			}
			start = -1
		}
	}
	return 0, false
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
	if sigaction(sig, sigDfl) == nil || sig == syscall.SIGKILL {
		_ = syscall.Kill(os.Getpid(), sig)
	}
	// A signal whose default is not to end the process (no plugin dies of
	// one), or a kernel that refused: the shell's convention.
	return 128 + int(sig)
}

// sigaction sets sig's disposition to handler (SIG_DFL or SIG_IGN), behind
// the Go runtime's back: no flags, nothing masked.
func sigaction(sig syscall.Signal, handler uintptr) error {
	var act [8]uint64 // larger than any port's struct sigaction
	act[0] = uint64(handler)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(&act)), 0, sigsetSize, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// sigsetSize is the kernel's sizeof(sigset_t) for rt_sigaction: 64
// signals on every Linux port but MIPS, where the call fails (the plugin's
// signals then reach the shepherd too, and its own death by a signal is
// passed on as an exit code).
const sigsetSize = 8

// atoi parses a non-negative decimal int, as strconv would; strconv is
// not imported, for the reason at the top of this file.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// itoa formats a non-negative n in decimal, followed by end.
func itoa(n int, end byte) []byte {
	b := []byte{end}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return b
		}
	}
}
