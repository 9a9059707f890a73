package shepherd

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// A confined program is started through a stage: the running binary once
// more, re-executed by the shepherd with stageKey in its environment. The
// stage lets go of the controlling terminal (dropTerminal: /dev/tty opens
// nothing) and the shepherd starts it in a new user, PID and mount
// namespace of its own and, unless the sandbox grants any network, a
// network namespace, whose only interface is a loopback that is down: no
// packet of any protocol leaves it, UDP and DNS included. The stage, the
// PID namespace's init, mounts that namespace's /proc over /proc
// (mountProc), confines its one thread (confine: Landlock and
// no_new_privs) and starts the program from that thread (initOf), so the
// program starts inside the domain and every process it starts inherits
// it. Only a process of its own can be confined this way: Landlock binds
// the thread that asks, and a shepherd confined itself could not read
// /proc to end the tree nor write the namespace's user map. Without a
// user namespace (refused) the stage executes the program instead, and,
// unless the whole network is granted, adds to Landlock a seccomp filter
// that refuses every socket but TCP and unix ones (holdSockets), since no
// network namespace holds UDP and DNS back.
//
// The stage reports on its descriptor 3 as the shepherd reports to the
// host: 'R' once the program runs under it (or nothing, when it executes
// the program, whose exec closes the socket), or the errno that stopped
// it; before that, it hands over the listener it made for the egress
// proxy, if any; and last, as init, the program's wait status.

// stageKey marks the stage: its value is the program to run, and argv
// its argv. sandboxKey holds the Sandbox (encode), for the shepherd and
// then for the stage.
const (
	stageKey   = "BINGO_SANDBOX_STAGE"
	sandboxKey = "BINGO_SANDBOX"
	reportFd   = 3
)

// netnsKey tells the stage it is in a network namespace of its own,
// where it brings up the loopback and listens on the proxy's port for
// the shepherd to forward (it holds CAP_NET_ADMIN there for that, and
// drops it before the program runs).
const netnsKey = "BINGO_SANDBOX_NETNS"

// Linux constants the syscall package does not name.
const (
	capNetAdmin          = 12
	capSysAdmin          = 21
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	siocsifflags         = 0x8914
)

// proxyPort returns the port of s.Proxy, or 0.
func (s *Sandbox) proxyPort() int {
	i := len(s.Proxy) - 1
	for i >= 0 && s.Proxy[i] != ':' {
		i--
	}
	if i < 0 || s.Proxy[:i] != "127.0.0.1" {
		return 0
	}
	n, ok := atoi(s.Proxy[i+1:])
	if !ok || n <= 0 || n > 65535 {
		return 0
	}
	return n
}

// stage confines itself and becomes the program at path. It never
// returns.
func stage(path string) {
	// Landlock and no_new_privs bind the thread that asks; exec keeps
	// only the thread that calls it. They must be one thread.
	runtime.LockOSThread()
	s := decodeSandbox(os.Getenv(sandboxKey))
	_ = os.Unsetenv(sandboxKey)
	syscall.CloseOnExec(reportFd)
	var ports []uint16
	if port := s.proxyPort(); port != 0 {
		ports = append(ports, uint16(port))
		if os.Getenv(netnsKey) != "" {
			if err := listenForProxy(port); err != nil {
				fail(err)
			}
		}
	}
	_ = os.Unsetenv(netnsKey)
	// First in a PID namespace of its own: /proc is made the
	// namespace's, before Landlock, which forbids mounting.
	pidns := os.Getpid() == 1
	if pidns {
		if err := mountProc(); err != nil {
			if s.Require {
				fail(err)
			}
			_, _ = os.Stderr.WriteString("bingo: /proc is the machine's (" + err.Error() + "): other processes' command lines and status are visible to the plugin\n")
		}
	}
	dropTerminal()
	// No capability of the namespace reaches the program.
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0)
	if _, err := confine(s, ports); err != nil {
		if s.Require {
			fail(err)
		}
		_, _ = os.Stderr.WriteString("bingo: the plugin runs without its file-system sandbox: " + err.Error() + "\n")
	}
	holdSockets(s, pidns) // a PID namespace comes with the user namespace
	if pidns {
		initOf(path)
	}
	fail(syscall.Exec(path, os.Args, os.Environ()))
}

// mountProc gives the stage's mount namespace a /proc of its own PID
// namespace's, so the plugin sees its own processes only: bingo's and
// everyone else's command lines and status are not there to read. Its
// mounts are made private first, so nothing of this reaches the
// machine's.
func mountProc() error {
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return &os.SyscallError{Syscall: "mount proc", Err: err}
	}
	return nil
}

// initOf is the stage as its PID namespace's init: the program cannot be
// that, since an init ignores every signal it has no handler for (the
// exec transport's SIGTERM would not end a Python script), and reaps
// what its orphans leave. It starts the program from its confined
// thread, so the program inherits the domain, reports 'R' to the
// shepherd, reaps until the program is gone, and reports the program's
// wait status ("X<status>\n"), which the shepherd exits with. Its own
// end then ends every process left in the namespace.
func initOf(path string) {
	pid, err := syscall.ForkExec(path, os.Args, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fail(err)
	}
	// An init is sent, from its namespace or an outer one, only the
	// signals it handles: with the defaults, none but SIGKILL ends it
	// (the group signals of the stop sequence are the program's). The
	// faults, SIGCHLD, SIGPIPE and the scheduler's SIGURG stay the Go
	// runtime's.
	for sig := syscall.Signal(1); sig < 32; sig++ {
		switch sig {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGPIPE, syscall.SIGURG,
			syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP:
			continue
		}
		_ = sigaction(sig, sigDfl)
	}
	_, _ = syscall.Write(reportFd, []byte{'R'})
	// The wire and the log are the program's alone.
	for fd := 0; fd <= 2; fd++ {
		_ = syscall.Close(fd)
	}
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			os.Exit(127) // ECHILD: not reached, the program is a child until reaped
		}
		if p == pid {
			_, _ = syscall.Write(reportFd, append([]byte{'X'}, itoa(int(ws), '\n')...))
			os.Exit(0)
		}
	}
}

// listenForProxy brings up the namespace's loopback, listens on its
// 127.0.0.1:port and hands the listener to the shepherd, which forwards
// what arrives to the egress proxy outside.
func listenForProxy(port int) error {
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var ifr [40]byte // struct ifreq: the name, then the flags
	copy(ifr[:], "lo")
	*(*uint16)(unsafe.Pointer(&ifr[16])) = syscall.IFF_UP | syscall.IFF_RUNNING
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(s), siocsifflags, uintptr(unsafe.Pointer(&ifr)))
	_ = syscall.Close(s)
	if errno != 0 {
		return &os.SyscallError{Syscall: "ioctl(SIOCSIFFLAGS lo)", Err: errno}
	}
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(l)
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return &os.SyscallError{Syscall: "bind", Err: err}
	}
	if err := syscall.Listen(l, 64); err != nil {
		return &os.SyscallError{Syscall: "listen", Err: err}
	}
	return syscall.Sendmsg(reportFd, []byte{'L'}, syscall.UnixRights(l), nil, 0)
}

// dropTerminal detaches the stage, and so the program, from the
// controlling terminal it inherited, if any (TIOCNOTTY, which for a
// process that does not lead its session ends its own tie only): /dev/tty
// then opens nothing, even where Landlock is missing. Not setsid: a
// session of its own would be a scheduling group of its own too
// (autogroup), and every call's wake-up across groups costs the plugin
// half a millisecond on a busy machine.
func dropTerminal() {
	fd, err := syscall.Open("/dev/tty", syscall.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return // none
	}
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCNOTTY, 0)
	_ = syscall.Close(fd)
}

// fail reports err's errno to the shepherd and ends the stage.
func fail(err error) {
	errno := syscall.EINVAL
	for e := err; e != nil; {
		if n, ok := e.(syscall.Errno); ok {
			errno = n
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	_, _ = syscall.Write(reportFd, itoa(int(errno), '\n'))
	os.Exit(127)
}

// startConfined starts the program at path through a stage that confines
// it to s, with a private temporary directory (TMPDIR) the shepherd
// removes once the tree is gone (through cleanup), and, if s has a proxy,
// the proxy variables, and the forwarding to it from the program's
// namespace. It returns the program's pid once it runs, or the errno that
// stopped it.
func startConfined(path string, argv, env []string, s *Sandbox) (pid int, cleanup func(), final func(syscall.WaitStatus) syscall.WaitStatus, err error) {
	cleanup = func() {}
	final = func(ws syscall.WaitStatus) syscall.WaitStatus { return ws }
	tmp, err := os.MkdirTemp("", "bingo-plugin-")
	if err != nil {
		return 0, cleanup, final, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	s.Write = append(s.Write, tmp)
	env = setenv(env, "TMPDIR", tmp)
	port := s.proxyPort()
	if port != 0 {
		proxy := "http://" + s.Proxy
		for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
			env = setenv(env, k, proxy)
		}
		// Node's own fetch reads them only when asked to.
		env = setenv(setenv(setenv(env, "NODE_USE_ENV_PROXY", "1"), "NO_PROXY", ""), "no_proxy", "")
	}
	env = append(env, stageKey+"="+path, sandboxKey+"="+s.encode())
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, cleanup, final, err
	}
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2, uintptr(fds[1])},
		// Should the shepherd itself be killed, the program goes with it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	// A user namespace, and in it a PID and mount namespace (a /proc of
	// the plugin's own processes: the stage mounts it) and, unless the
	// whole network is granted, a network namespace.
	var nsErr error
	uid, gid := os.Getuid(), os.Getgid()
	attr.Sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.Sys.GidMappingsEnableSetgroups = false
	attr.Sys.AmbientCaps = []uintptr{capSysAdmin}
	if !s.AnyNetwork() {
		attr.Sys.Cloneflags |= syscall.CLONE_NEWNET
		if port != 0 {
			attr.Sys.AmbientCaps = append(attr.Sys.AmbientCaps, capNetAdmin)
			attr.Env = append(attr.Env, netnsKey+"=1")
		}
	}
	pid, err = syscall.ForkExec(self, argv, attr)
	if err != nil && err != syscall.ENOENT {
		// User namespaces refused (a sysctl, AppArmor, a container):
		// the stage still confines the network by Landlock and
		// seccomp (holdSockets), not /proc.
		nsErr = err
		attr.Sys.Cloneflags, attr.Sys.UidMappings, attr.Sys.GidMappings, attr.Sys.AmbientCaps = 0, nil, nil, nil
		attr.Env = env
		pid, err = syscall.ForkExec(self, argv, attr)
	}
	_ = syscall.Close(fds[1])
	if err != nil {
		_ = syscall.Close(fds[0])
		return 0, cleanup, final, err
	}
	if nsErr != nil {
		less := withoutUserns(s, nsErr.Error())
		if s.Require {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reapOne(pid)
			_ = syscall.Close(fds[0])
			_, _ = os.Stderr.WriteString("bingo: not started: " + less + "; and sandbox.require is set\n")
			return 0, cleanup, final, syscall.EPERM
		}
		_, _ = os.Stderr.WriteString("bingo: " + less + "\n")
	}
	// The stage's report: a listener to forward, then 'R' (the program
	// runs under the stage, its PID namespace's init) or nothing (the
	// program runs: exec closed the stage's end), or an errno.
	var report, rest []byte // rest: what came after 'R', for final
	running := false
	buf, oob := make([]byte, 16), make([]byte, syscall.CmsgSpace(4))
	for !running {
		n, oobn, _, _, rerr := syscall.Recvmsg(fds[0], buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if rerr == syscall.EINTR {
			continue
		}
		for _, f := range handed(oob[:oobn]) {
			go forward(f, port)
		}
		if rerr != nil || n <= 0 {
			break
		}
		for i, c := range buf[:n] {
			if running {
				rest = append(rest, buf[i:n]...) // a quick program's end
				break
			}
			switch c {
			case 'L':
			case 'R':
				running = true
			default:
				report = append(report, c)
			}
		}
	}
	if running || len(report) == 0 {
		if !running {
			_ = syscall.Close(fds[0])
			return pid, cleanup, final, nil
		}
		// Once the stage is reaped, the program's own status is what
		// it reported last.
		final = func(ws syscall.WaitStatus) syscall.WaitStatus {
			defer syscall.Close(fds[0])
			for {
				n, err := syscall.Read(fds[0], buf)
				if err == syscall.EINTR {
					continue
				}
				if n <= 0 || err != nil {
					break
				}
				rest = append(rest, buf[:n]...)
			}
			if i := len(rest) - 1; i > 0 && rest[0] == 'X' && rest[i] == '\n' {
				if n, ok := atoi(string(rest[1:i])); ok {
					return syscall.WaitStatus(n)
				}
			}
			return ws
		}
		return pid, cleanup, final, nil
	}
	_ = syscall.Close(fds[0])
	reapOne(pid)
	if e, ok := atoi(string(trimNL(report))); ok {
		return 0, cleanup, final, syscall.Errno(e)
	}
	return 0, cleanup, final, syscall.EINVAL
}

// forward accepts on the listener the stage made in the program's
// namespace and relays each connection to the egress proxy, on the same
// port of the host's loopback, until the shepherd ends. Blocking calls,
// each on its own goroutine: a plugin opens few connections, and the
// shepherd's imports stay what they are.
func forward(f *os.File, port int) {
	defer f.Close()
	listener := int(f.Fd()) // and blocking, as the loop below wants
	for {
		c, _, err := syscall.Accept4(listener, syscall.SOCK_CLOEXEC)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil {
			return
		}
		go relay(c, port)
	}
}

// relay copies between c and a new connection to 127.0.0.1:port, both
// ways, until both have ended.
func relay(c, port int) {
	defer syscall.Close(c)
	up, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(up)
	if err := syscall.Connect(up, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { pump(up, c); close(done) }()
	pump(c, up)
	<-done
}

// pump copies src to dst until src ends, then ends dst's writing.
func pump(dst, src int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.Read(src, buf)
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 {
			break
		}
		for w := 0; w < n; {
			m, err := syscall.Write(dst, buf[w:n])
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				_ = syscall.Shutdown(src, syscall.SHUT_RD)
				return
			}
			w += m
		}
	}
	_ = syscall.Shutdown(dst, syscall.SHUT_WR)
}

// reapOne waits for the child pid, which has ended or is ending.
func reapOne(pid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

func trimNL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}

// setenv returns env with key set to value, once.
func setenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}

// Isolation says how a program confined to s would be isolated here, as
// bingo plugins shows it: the mechanisms in force, joined by "+" —
// "landlock", "seccomp" (the socket filter, where user namespaces are
// refused: seccomp_linux.go), "netns" (a network namespace of its own,
// unless its whole network is granted), "pidns" (a PID namespace of its
// own, whose /proc shows its own processes only) — or "none"; the default
// is "landlock+netns+pidns", and where user namespaces are refused
// "landlock+seccomp". And, where that is less than s asks for, why.
func Isolation(s *Sandbox) (level, less string) {
	if !Available() {
		return "none", "no shepherd (/proc is not mounted)"
	}
	landlock, userns := LandlockABI() >= 1, true
	var why []string
	if !landlock {
		why = append(why, "the kernel offers no Landlock, so no file is out of its reach")
	}
	if err := userNamespaces(); err != "" {
		userns = false
		why = append(why, withoutUserns(s, err))
	}
	var in []string
	if landlock {
		in = append(in, "landlock")
	}
	if !userns && !s.AnyNetwork() && SeccompAvailable() {
		in = append(in, "seccomp")
	}
	if userns && !s.AnyNetwork() {
		in = append(in, "netns")
	}
	if userns {
		in = append(in, "pidns")
	}
	level = "none"
	if len(in) > 0 {
		level = strings.Join(in, "+")
	}
	return level, strings.Join(why, "; ")
}

// withoutUserns says what a program confined to s lacks here for want
// of a user namespace, refused for the reason why: the network namespace
// (unless its whole network is granted), which the stage's Landlock and
// socket filter stand in for as far as they go, and the PID namespace.
func withoutUserns(s *Sandbox, why string) string {
	abi := LandlockABI()
	var lacks []string
	if !s.AnyNetwork() {
		held := "of the network, only TCP is held back (Landlock); UDP and DNS are not"
		switch tcp := abi >= 4; {
		case SeccompAvailable() && tcp:
			held = "UDP, DNS and every socket but TCP and unix ones are refused (seccomp), and TCP held back (Landlock)"
		case SeccompAvailable():
			held = "UDP, DNS and every socket but TCP and unix ones are refused (seccomp), but not TCP (Landlock before ABI 4)"
		case !tcp:
			held = "nothing of the network is held back"
		}
		lacks = append(lacks, "no network namespace ("+why+"): "+held, "nor a PID namespace: /proc shows every process")
	} else {
		lacks = append(lacks, "no PID namespace ("+why+"): /proc shows every process")
	}
	if abi >= 1 && abi < 6 {
		lacks = append(lacks, "and bingo can be sent signals (Landlock before ABI 6)")
	}
	return strings.Join(lacks, "; ")
}

// userNamespaces returns why a plugin cannot have a user namespace of its
// own here, or "": the sysctls that refuse them, read rather than tried,
// so that asking costs no process. (A refusal they do not show, as in a
// container, is found at the start, and said in the plugin's log.)
func userNamespaces() string {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return string(trimNL(b))
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		return "user.max_user_namespaces is 0"
	}
	if os.Getuid() != 0 {
		if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
			return "kernel.unprivileged_userns_clone is 0"
		}
		if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
			return "AppArmor restricts unprivileged user namespaces"
		}
	}
	return ""
}
