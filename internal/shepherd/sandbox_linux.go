package shepherd

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// A confined program is started through a stage: the running binary once
// more, re-executed by the shepherd with stageKey in its environment. The
// stage lets go of the controlling terminal (dropTerminal: /dev/tty opens
// nothing) and the shepherd starts it, unless the sandbox grants any
// network,
// in a new user and network namespace of its own, whose only interface is
// a loopback that is down: no packet of any protocol leaves it, UDP and
// DNS included. The stage then confines its one thread (confine: Landlock
// and no_new_privs) and executes the program from that thread, so the
// program starts inside the domain and every process it starts inherits
// it. Only a process of its own can be confined this way: Landlock binds
// the thread that asks, and a shepherd confined itself could not read
// /proc to end the tree nor write the namespace's user map.
//
// The stage reports on its descriptor 3, a socket closed by the program's
// exec, as the shepherd reports to the host: nothing once the program
// runs, or the errno that stopped it; before that, it hands over the
// listener it made for the egress proxy, if any.

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

// noNetnsKey, set in the host's environment, starts every confined
// program without a network namespace, as on a system that refuses one:
// how the tests see what a plugin is told there.
const noNetnsKey = "BINGO_SANDBOX_NO_NETNS"

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
	dropTerminal()
	// No capability of the namespace reaches the program.
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0)
	if _, err := confine(s, ports); err != nil {
		if s.Require {
			fail(err)
		}
		_, _ = os.Stderr.WriteString("bingo: the plugin runs without its file-system sandbox: " + err.Error() + "\n")
	}
	fail(syscall.Exec(path, os.Args, os.Environ()))
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
func startConfined(path string, argv, env []string, s *Sandbox) (pid int, cleanup func(), err error) {
	cleanup = func() {}
	tmp, err := os.MkdirTemp("", "bingo-plugin-")
	if err != nil {
		return 0, cleanup, err
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
		return 0, cleanup, err
	}
	defer syscall.Close(fds[0])
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2, uintptr(fds[1])},
		// Should the shepherd itself be killed, the program goes with it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	var nsErr error
	if !s.AnyNetwork() {
		if _, off := os.LookupEnv(noNetnsKey); off {
			nsErr = syscall.EPERM
		} else {
			uid, gid := os.Getuid(), os.Getgid()
			attr.Sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
			attr.Sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.Sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.Sys.GidMappingsEnableSetgroups = false
			if port != 0 {
				attr.Sys.AmbientCaps = []uintptr{capNetAdmin}
				attr.Env = append(attr.Env, netnsKey+"=1")
			}
		}
	}
	pid, err = syscall.ForkExec(self, argv, attr)
	if nsErr == nil && attr.Sys.Cloneflags != 0 && err != nil && err != syscall.ENOENT {
		// User namespaces refused (a sysctl, AppArmor, a container):
		// the stage still confines TCP by Landlock, not the rest.
		nsErr = err
		attr.Sys.Cloneflags, attr.Sys.UidMappings, attr.Sys.GidMappings, attr.Sys.AmbientCaps = 0, nil, nil, nil
		attr.Env = env
		pid, err = syscall.ForkExec(self, argv, attr)
	}
	_ = syscall.Close(fds[1])
	if err != nil {
		return 0, cleanup, err
	}
	if nsErr != nil {
		if s.Require {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reapOne(pid)
			_, _ = os.Stderr.WriteString("bingo: not started: it would have the network beside TCP, with no network namespace (" + nsErr.Error() + "), and sandbox.require is set\n")
			return 0, cleanup, syscall.EPERM
		}
		_, _ = os.Stderr.WriteString("bingo: no network namespace (" + nsErr.Error() + "): of the network, only TCP is held back (Landlock); UDP and DNS are not\n")
	}
	// The stage's report: a listener to forward, then nothing (the
	// program runs: exec closed the stage's end) or an errno.
	var report []byte
	buf, oob := make([]byte, 16), make([]byte, syscall.CmsgSpace(4))
	for {
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
		for _, c := range buf[:n] {
			if c != 'L' {
				report = append(report, c)
			}
		}
	}
	if len(report) == 0 {
		return pid, cleanup, nil
	}
	reapOne(pid)
	if e, ok := atoi(string(trimNL(report))); ok {
		return 0, cleanup, syscall.Errno(e)
	}
	return 0, cleanup, syscall.EINVAL
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
// bingo plugins shows it: "landlock+netns" (the default: Landlock and a
// network namespace of its own), "landlock" (no namespace: its network
// is granted whole, or namespaces are refused), "netns" or "none"; and,
// where that is less than s asks for, why.
func Isolation(s *Sandbox) (level, less string) {
	if !Available() {
		return "none", "no shepherd (/proc is not mounted)"
	}
	landlock, netns := LandlockABI() >= 1, !s.AnyNetwork()
	var why []string
	if !landlock {
		why = append(why, "the kernel offers no Landlock, so no file is out of its reach")
	}
	if netns {
		if err := userNamespaces(); err != "" {
			netns = false
			why = append(why, "no network namespace ("+err+"), so only its TCP is held back")
		}
	}
	switch {
	case landlock && netns:
		level = "landlock+netns"
	case landlock:
		level = "landlock"
	case netns:
		level = "netns"
	default:
		level = "none"
	}
	for i, w := range why {
		if i > 0 {
			less += "; "
		}
		less += w
	}
	return level, less
}

// userNamespaces returns why a plugin cannot have a user namespace of its
// own here, or "": the sysctls that refuse them, read rather than tried,
// so that asking costs no process. (A refusal they do not show, as in a
// container, is found at the start, and said in the plugin's log.)
func userNamespaces() string {
	if _, off := os.LookupEnv(noNetnsKey); off {
		return noNetnsKey + " is set"
	}
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
