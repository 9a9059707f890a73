package shepherd

import (
	"os"
	"runtime"
	"syscall"
)

// A confined program is started through a stage: the running binary once
// more, re-executed by the shepherd with stageKey in its environment. The
// shepherd starts it in its own session (setsid: no controlling terminal,
// so /dev/tty opens nothing) and, unless the sandbox grants any network,
// in a new user and network namespace of its own, whose only interface is
// a loopback that is down: no packet of any protocol leaves it, UDP and
// DNS included. The stage then confines its one thread (confine: Landlock
// and no_new_privs) and executes the program from that thread, so the
// program starts inside the domain and every process it starts inherits
// it. Only a process of its own can be confined this way: Landlock binds
// the thread that asks, and a shepherd confined itself could not read
// /proc to end the tree nor write the namespace's user map.
//
// The stage reports on its descriptor 3, a pipe closed by the program's
// exec, as the shepherd reports to the host: nothing once the program
// runs, or the errno that stopped it.

// stageKey marks the stage: its value is the program to run, and argv
// its argv. sandboxKey holds the Sandbox (encode), for the shepherd and
// then for the stage.
const (
	stageKey   = "BINGO_SANDBOX_STAGE"
	sandboxKey = "BINGO_SANDBOX"
	reportFd   = 3
)

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
	if _, err := confine(s, nil); err != nil {
		if s.Require {
			fail(err)
		}
		_, _ = os.Stderr.WriteString("bingo: the plugin runs without its file-system sandbox: " + err.Error() + "\n")
	}
	fail(syscall.Exec(path, os.Args, os.Environ()))
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
// removes once the tree is gone (through cleanup). It returns the
// program's pid once it runs, or the errno that stopped it.
func startConfined(path string, argv, env []string, s *Sandbox) (pid int, cleanup func(), err error) {
	cleanup = func() {}
	tmp, err := os.MkdirTemp("", "bingo-plugin-")
	if err != nil {
		return 0, cleanup, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	s.Write = append(s.Write, tmp)
	env = append(setenv(env, "TMPDIR", tmp), stageKey+"="+path, sandboxKey+"="+s.encode())
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return 0, cleanup, err
	}
	defer syscall.Close(p[0])
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2, uintptr(p[1])},
		// Should the shepherd itself be killed, the program goes with it.
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
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
		}
	}
	pid, err = syscall.ForkExec(self, argv, attr)
	if nsErr == nil && attr.Sys.Cloneflags != 0 && err != nil && err != syscall.ENOENT {
		// User namespaces refused (a sysctl, AppArmor, a container):
		// the stage still confines TCP by Landlock, not the rest.
		nsErr = err
		attr.Sys.Cloneflags, attr.Sys.UidMappings, attr.Sys.GidMappings = 0, nil, nil
		pid, err = syscall.ForkExec(self, argv, attr)
	}
	_ = syscall.Close(p[1])
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
	var buf [16]byte
	n := 0
	for n < len(buf) {
		m, rerr := syscall.Read(p[0], buf[n:])
		if rerr == syscall.EINTR {
			continue
		}
		if m <= 0 {
			break
		}
		n += m
	}
	if n == 0 {
		return pid, cleanup, nil
	}
	reapOne(pid)
	if e, ok := atoi(string(trimNL(buf[:n]))); ok {
		return 0, cleanup, syscall.Errno(e)
	}
	return 0, cleanup, syscall.EINVAL
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
