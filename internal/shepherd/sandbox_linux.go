package shepherd

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// A confined program's shepherd is started (Wrap's Sys) in a new user,
// PID and mount namespace of its own and, unless the sandbox grants any
// network, a network namespace, whose only interface is a loopback that
// is down: no packet of any protocol leaves it, UDP and DNS included.
// The shepherd is the PID namespace's init, so the program is not (an
// init ignores every signal it has no handler for: the stop sequence's
// SIGTERM would not end a Python script). It mounts the namespace's
// /proc over /proc (mountProc), lets go of the controlling terminal
// (dropTerminal: /dev/tty opens nothing), and starts the program from a
// thread of its own that it has confined first (dropCapabilities, then
// confine: Landlock and no_new_privs), so the program starts inside the
// domain with no capability, and every
// process it starts inherits it, while the shepherd's other threads stay
// outside: Landlock binds the thread that asks, and the Go runtime
// starts no thread from one a goroutine has locked. They read /proc to
// end the tree, relay to the egress proxy, and signal the program, which
// cannot signal or trace them back (Landlock refuses both outside the
// domain). Where user namespaces are refused, the shepherd does the same
// without them, and, unless the whole network is granted, adds to Landlock
// a seccomp filter that refuses every socket but TCP and unix ones
// (holdSockets), since no network namespace holds UDP and DNS back.
//
// A shepherd that is init cannot die of the signal that ended the program
// (the kernel spares an init every signal from its own namespace, itself
// included): it exits with the shell's 128+signal, and reports the
// program's wait status on the lifeline first ("X<status>\n"), which
// Exited reads.

// sandboxKey holds the Sandbox (encode), for the shepherd; lessKey, set
// by WithoutNamespaces where the shepherd starts without a user
// namespace, says why, for the plugin's log; idsKey holds the host's user
// and group IDs, for mapSelf.
const (
	sandboxKey = "BINGO_SANDBOX"
	lessKey    = "BINGO_SANDBOX_LESS"
	idsKey     = "BINGO_SANDBOX_IDS"
)

// Linux constants the syscall package does not name.
const (
	capSetpcap           = 8
	capNetAdmin          = 12
	capSysResource       = 24
	capSysAdmin          = 21
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	prSetSecurebits      = 28
	prCapbsetDrop        = 24
	linuxCapabilityV3    = 0x20080522
	secbitNoroot         = 1 << 0
	secbitNorootLocked   = 1 << 1
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

// namespaces returns how the shepherd of a program confined to s starts
// in namespaces of its own. Where user namespaces are refused, the start
// fails, and WithoutNamespaces says what then.
//
// The clone is a vfork (CLONE_VM|CLONE_VFORK), which Go makes only
// without a new user namespace, as for any other start: a fork would copy
// the host's page tables, whose cost grows with its memory (12 ms for a
// host of 300 MB here) and stalls its other threads. Go leaves the vfork
// out there because the parent, suspended until the child executes,
// could not write the child's ID maps; so none is given, and the
// shepherd writes its own (mapSelf), which a process may do for its own
// IDs.
func namespaces(s *Sandbox) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_VM | syscall.CLONE_VFORK |
			syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		// Exec keeps no capability of the namespace but these: to write
		// its ID maps and mount its /proc, to take every capability from
		// the program (dropCapabilities), to refuse it user namespaces
		// (noNestedUserns), and to bring up its loopback for the proxy.
		AmbientCaps: []uintptr{capSysAdmin, capSetpcap, capSysResource},
	}
	if !s.AnyNetwork() {
		attr.Cloneflags |= syscall.CLONE_NEWNET
		if s.proxyPort() != 0 {
			attr.AmbientCaps = append(attr.AmbientCaps, capNetAdmin)
		}
	}
	return attr
}

// mapSelf writes the shepherd's own ID maps in the user namespace it
// starts in: its user and group IDs outside (uid and gid, which Wrap
// passes, since inside they read as the overflow IDs until mapped) map to
// themselves, and setgroups is refused, as the kernel requires of a
// process mapping its own group.
func mapSelf(uid, gid string) error {
	for _, w := range [][2]string{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/gid_map", gid + " " + gid + " 1\n"},
		{"/proc/self/uid_map", uid + " " + uid + " 1\n"},
	} {
		fd, err := syscall.Open(w[0], syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return &os.SyscallError{Syscall: "open " + w[0], Err: err}
		}
		_, err = syscall.Write(fd, []byte(w[1]))
		_ = syscall.Close(fd)
		if err != nil {
			return &os.SyscallError{Syscall: "write " + w[0], Err: err}
		}
	}
	return nil
}

// WithoutNamespaces returns c, the Command Wrap returned, to be started
// again without the namespaces whose start failed with err, as where user
// namespaces are refused (a sysctl, AppArmor, a container); or an error,
// if err is not such a refusal or c's sandbox requires them. The
// shepherd then holds the network back by Landlock and seccomp
// (holdSockets), not /proc.
//
// A refusal is EPERM (a sysctl such as unprivileged_userns_clone, a
// container's seccomp profile, a chroot), EACCES (an LSM: AppArmor,
// SELinux), EINVAL (a kernel built without these namespaces), or ENOSPC
// where user.max_user_namespaces is 0. Any other error, ENOSPC past a
// limit that is not 0 among them (which a plugin may have exhausted by
// holding namespaces of its own), is not: the start fails with it rather
// than give a later plugin less than its sandbox.
func WithoutNamespaces(c Command, err error) (Command, error) {
	var errno syscall.Errno
	if c.Sys == nil || !errors.As(err, &errno) {
		return c, err
	}
	switch errno {
	case syscall.EPERM, syscall.EACCES, syscall.EINVAL:
	case syscall.ENOSPC:
		if userNamespaces() == "" {
			return c, err
		}
	default:
		return c, err
	}
	s := decodeSandbox(getenv(c.Env, sandboxKey))
	if s.Require {
		return c, errors.New("not started: " + withoutUserns(s, errno.Error()) + "; and sandbox.require is set")
	}
	c.Sys = nil
	c.Env = setenv(c.Env, lessKey, errno.Error())
	return c, nil
}

// startConfined starts the program at path confined to s, with a private
// temporary directory (TMPDIR) the shepherd removes once the tree is gone
// (through cleanup), and, if s has a proxy, the proxy variables, and the
// forwarding to it from the program's namespace. It returns the
// program's pid once it runs, or the error that stopped it.
func startConfined(path string, argv, env []string, s *Sandbox) (pid int, cleanup func(), err error) {
	cleanup = func() {}
	tmp, err := os.MkdirTemp("", "bingo-plugin-")
	if err != nil {
		return 0, cleanup, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	s.Write = append(s.Write, tmp)
	env = setenv(env, "TMPDIR", tmp)
	var ports []uint16
	port := s.proxyPort()
	if port != 0 {
		ports = append(ports, uint16(port))
		proxy := "http://" + s.Proxy
		for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
			env = setenv(env, k, proxy)
		}
		// Node's own fetch reads them only when asked to.
		env = setenv(setenv(setenv(env, "NODE_USE_ENV_PROXY", "1"), "NO_PROXY", ""), "no_proxy", "")
	}
	userns := os.Getpid() == 1 // a PID namespace comes with the user namespace
	if userns {
		// In namespaces of its own (Wrap): its IDs are mapped, /proc is
		// made the namespace's, and the proxy's port on its loopback
		// forwarded.
		ids := strings.Fields(os.Getenv(idsKey))
		if len(ids) != 2 {
			return 0, cleanup, syscall.EINVAL
		}
		if err := mapSelf(ids[0], ids[1]); err != nil {
			return 0, cleanup, err
		}
		if err := mountProc(); err != nil {
			if s.Require {
				return 0, cleanup, err
			}
			_, _ = os.Stderr.WriteString("bingo: /proc is the machine's (" + err.Error() + "): other processes' command lines and status are visible to the plugin\n")
		}
		if err := noNestedUserns(); err != nil {
			if s.Require {
				return 0, cleanup, err
			}
			_, _ = os.Stderr.WriteString("bingo: the plugin may make user namespaces of its own (" + err.Error() + ")\n")
		}
		if port != 0 && !s.AnyNetwork() {
			l, err := listenForProxy(port)
			if err != nil {
				return 0, cleanup, err
			}
			go forward(l, s.ProxySocket)
		}
	} else if why, ok := os.LookupEnv(lessKey); ok {
		_, _ = os.Stderr.WriteString("bingo: " + withoutUserns(s, why) + "\n")
	}
	env = unsetenv(unsetenv(env, lessKey), idsKey)
	dropTerminal()
	// Its /proc entries (environ, fd, mem, the threads') are for no one
	// without CAP_SYS_PTRACE, which the program never has: not even those
	// of the thread that starts it, in the program's Landlock domain.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	type started struct {
		pid int
		err error
	}
	done := make(chan started, 1)
	go func() {
		// Locked for good: the thread ends with this goroutine, its
		// domain with it, and lives while the program does, whose
		// parent-death signal is the thread's.
		runtime.LockOSThread()
		if err := dropCapabilities(); err != nil {
			_, _ = os.Stderr.WriteString("bingo: not started: its capabilities could not be dropped: " + err.Error() + "\n")
			done <- started{err: err}
			return
		}
		// Where the kernel has Landlock, a domain that could not be
		// applied refuses the start: never a plugin that Isolation says
		// is confined running without it. Where it has none, Isolation
		// has said so ("none"), and the plugin runs as that says.
		if _, err := confine(s, ports); err != nil {
			if s.Require || LandlockABI() >= 1 {
				_, _ = os.Stderr.WriteString("bingo: not started: its file-system sandbox could not be applied: " + err.Error() + "\n")
				done <- started{err: err}
				return
			}
			_, _ = os.Stderr.WriteString("bingo: the plugin runs without its file-system sandbox: " + err.Error() + "\n")
		}
		if err := holdSockets(s, userns); err != nil {
			done <- started{err: err}
			return
		}
		pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Env:   env,
			Files: []uintptr{0, 1, 2},
			// Should the shepherd itself be killed, the program goes with
			// it (as init, with every process of its namespace).
			Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
		done <- started{pid, err}
		if err == nil {
			select {}
		}
	}()
	r := <-done
	return r.pid, cleanup, r.err
}

// dropCapabilities leaves the calling thread, and so the program it
// starts, no capability: none ambient; where it may (CAP_SETPCAP: in its
// user namespace, or bingo run as root), none in its bounding set, and
// root's exec grants none (SECBIT_NOROOT, locked); and none permitted,
// effective or inheritable. A program that is root in its namespace (bingo
// run as root) would otherwise keep the capabilities the shepherd was
// started with: no_new_privs caps what exec grants at what the thread
// holds.
func dropCapabilities() error {
	prctl := func(name string, args ...uintptr) error {
		var a [5]uintptr
		copy(a[:], args)
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, a[0], a[1], a[2], a[3], a[4], 0); errno != 0 {
			return &os.SyscallError{Syscall: "prctl(" + name + ")", Err: errno}
		}
		return nil
	}
	// EINVAL: a kernel before 4.3, which has no ambient capabilities.
	if err := prctl("PR_CAP_AMBIENT_CLEAR_ALL", prCapAmbient, prCapAmbientClearAll); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: linuxCapabilityV3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return &os.SyscallError{Syscall: "capget", Err: errno}
	}
	if data[0].effective&(1<<capSetpcap) != 0 {
		if err := prctl("PR_SET_SECUREBITS", prSetSecurebits, secbitNoroot|secbitNorootLocked); err != nil {
			return err
		}
		for c := uintptr(0); ; c++ {
			err := prctl("PR_CAPBSET_DROP", prCapbsetDrop, c)
			if errors.Is(err, syscall.EINVAL) {
				break // past the last capability the kernel knows
			}
			if err != nil {
				return err
			}
		}
	}
	data = [2]struct{ effective, permitted, inheritable uint32 }{}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return &os.SyscallError{Syscall: "capset", Err: errno}
	}
	return nil
}

// noNestedUserns sets user.max_user_namespaces to 0 in the shepherd's
// user namespace, whose limit is its own (and binds every namespace made
// in it): the program can make no user namespace, so none of the
// capabilities one would give it, nor a share of the person's count of
// them to hold, which a later plugin's start would then be refused.
func noNestedUserns() error {
	const path = "/proc/sys/user/max_user_namespaces"
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.SyscallError{Syscall: "open " + path, Err: err}
	}
	defer syscall.Close(fd)
	if _, err := syscall.Write(fd, []byte("0\n")); err != nil {
		return &os.SyscallError{Syscall: "write " + path, Err: err}
	}
	return nil
}

// mountProc gives the shepherd's mount namespace a /proc of its own PID
// namespace's, so the plugin sees its own processes only: bingo's and
// everyone else's command lines and status are not there to read. A
// mount namespace made in a user namespace of its own receives the
// machine's mounts but passes none back.
func mountProc() error {
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return &os.SyscallError{Syscall: "mount proc", Err: err}
	}
	return nil
}

// listenForProxy brings up the namespace's loopback and returns a
// listener on its 127.0.0.1:port, which forward relays to the egress
// proxy outside.
func listenForProxy(port int) (int, error) {
	s, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var ifr [40]byte // struct ifreq: the name, then the flags
	copy(ifr[:], "lo")
	*(*uint16)(unsafe.Pointer(&ifr[16])) = syscall.IFF_UP | syscall.IFF_RUNNING
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(s), siocsifflags, uintptr(unsafe.Pointer(&ifr)))
	_ = syscall.Close(s)
	if errno != 0 {
		return -1, &os.SyscallError{Syscall: "ioctl(SIOCSIFFLAGS lo)", Err: errno}
	}
	l, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.Bind(l, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(l)
		return -1, &os.SyscallError{Syscall: "bind", Err: err}
	}
	if err := syscall.Listen(l, 64); err != nil {
		_ = syscall.Close(l)
		return -1, &os.SyscallError{Syscall: "listen", Err: err}
	}
	return l, nil
}

// dropTerminal detaches the shepherd, and so the program, from the
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

// forward accepts on the listener in the program's namespace and relays
// each connection to the egress proxy's unix socket, whose path reaches
// across network namespaces, until the shepherd ends. Blocking calls,
// each on its own goroutine: a plugin opens few connections, and the
// shepherd's imports stay what they are.
func forward(listener int, socket string) {
	defer syscall.Close(listener)
	for {
		c, _, err := syscall.Accept4(listener, syscall.SOCK_CLOEXEC)
		if err == syscall.EINTR || err == syscall.ECONNABORTED {
			continue
		}
		if err != nil {
			return
		}
		go relay(c, socket)
	}
}

// relay copies between c and a new connection to the unix socket, both
// ways, until both have ended.
func relay(c int, socket string) {
	defer syscall.Close(c)
	up, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(up)
	if err := syscall.Connect(up, &syscall.SockaddrUnix{Name: socket}); err != nil {
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

func trimNL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}

// setenv returns env with key set to value, once.
func setenv(env []string, key, value string) []string {
	return append(unsetenv(env, key), key+"="+value)
}

// unsetenv returns env without key.
func unsetenv(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// getenv returns key's value in env, or "".
func getenv(env []string, key string) string {
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)] == key && kv[len(key)] == '=' {
			return kv[len(key)+1:]
		}
	}
	return ""
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
// (unless its whole network is granted), which the shepherd's Landlock and
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
