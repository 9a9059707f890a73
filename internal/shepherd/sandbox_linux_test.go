package shepherd

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestSandboxEncodes(t *testing.T) {
	s := &Sandbox{Read: []string{"/usr", "/a b"}, Write: []string{"/w"}, List: []string{"/l"}, Network: []string{"x:1"}, Proxy: "127.0.0.1:9", ProxySocket: "/tmp/p", Require: true, abi: 5}
	if got := decodeSandbox(s.encode()); !reflect.DeepEqual(got, s) {
		t.Errorf("decoded %+v, want %+v", got, s)
	}
	// A path with a line break cannot be said: it is left out, which
	// only narrows what the program reaches.
	if got := decodeSandbox((&Sandbox{Read: []string{"/a\n/", "/b"}}).encode()); !reflect.DeepEqual(got.Read, []string{"/b"}) {
		t.Errorf("decoded %q", got.Read)
	}
}

// confined runs sh -c script under a shepherd, confined to s, and returns
// its output and error.
func confined(t *testing.T, s *Sandbox, script string) (string, error) {
	t.Helper()
	sh := lookPath(t, "sh")
	c, lifeline, child, err := Wrap(Command{Path: sh, Args: []string{"sh", "-c", script}, Env: os.Environ(), Sandbox: s})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.Path)
	cmd.Args, cmd.Env, cmd.ExtraFiles, cmd.SysProcAttr = c.Args, c.Env, []*os.File{child}, c.Sys
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer lifeline.Close()
	if err := Started(lifeline, sh); err != nil {
		_ = cmd.Wait()
		return out.String(), err
	}
	err = cmd.Wait()
	if ws, ok := Exited(lifeline); ok && ws.Signaled() {
		err = signalled{ws}
	}
	return out.String(), err
}

// signalled is a program's end by a signal its shepherd could not die of
// (Exited).
type signalled struct{ syscall.WaitStatus }

func (s signalled) Error() string { return "signal: " + s.Signal().String() }

// What a sandbox does not name is out of reach, for the program and the
// processes it starts, and what it names is not; it has no terminal, and
// TMPDIR its own.
func TestConfined(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("no Landlock here")
	}
	dir := t.TempDir()
	secret, open := filepath.Join(dir, "secret"), filepath.Join(dir, "open")
	for _, d := range []string{secret, open} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	system := []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"}
	s := &Sandbox{Read: append(system, open), Write: []string{"/dev/null"}}
	out, err := confined(t, s, `cat `+open+`/f && echo && ! cat `+secret+`/f 2>/dev/null && ! sh -c 'cat `+secret+`/f' 2>/dev/null && ! touch `+open+`/g 2>/dev/null && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t" && ! sh -c ': < /dev/tty' 2>/dev/null && echo done`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Fields(out)
	if len(lines) != 3 || lines[0] != "x" || lines[1] != "tmp" || lines[2] != "done" {
		t.Errorf("output %q: want the open file, TMPDIR written, and no terminal", out)
	}
	// A program the sandbox cannot execute fails Start as any other.
	if _, err := confined(t, &Sandbox{Read: []string{open}}, "true"); err == nil || !strings.Contains(err.Error(), syscall.EACCES.Error()) {
		t.Errorf("a program outside the sandbox: %v, want %v", err, syscall.EACCES)
	}
}

// A confined program's /proc is its PID namespace's: it lists its own
// processes (the shepherd, its init, and itself), not the test's; and
// the shepherd passes its exit, or the signal that ended it, on as the
// program's.
func TestConfinedProcAndStatus(t *testing.T) {
	needConfinement(t)
	s := &Sandbox{Read: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"}, Write: []string{"/dev/null"}}
	mine := strconv.Itoa(os.Getpid())
	out, err := confined(t, s, `ls /proc; exit 3`)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit 3 came back as %v: %s", err, out)
	}
	var pids []string
	for _, name := range strings.Fields(out) {
		if _, err := strconv.Atoi(name); err == nil {
			pids = append(pids, name)
		}
	}
	if len(pids) == 0 || len(pids) > 3 || slices.Contains(pids, mine) {
		t.Errorf("the program's /proc lists %v (the test is %s): want its own few processes", pids, mine)
	}
	_, err = confined(t, s, `kill -TERM $$`)
	var sig signalled
	if !errors.As(err, &sig) || sig.Signal() != syscall.SIGTERM {
		t.Errorf("a program ended by SIGTERM came back as %v", err)
	}
}

// The shepherd of a confined program is the init of the program's PID
// namespace and the program's parent: one process, one Go start, stands
// between the host and the program.
func TestConfinedShepherdIsInit(t *testing.T) {
	needConfinement(t)
	sh := lookPath(t, "sh")
	s := &Sandbox{Read: []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"}, Write: []string{"/dev/null"}}
	c, lifeline, child, err := Wrap(Command{Path: sh, Args: []string{"sh", "-c", "echo $PPID; read x"}, Env: os.Environ(), Sandbox: s})
	if err != nil {
		t.Fatal(err)
	}
	defer lifeline.Close()
	cmd := exec.Command(c.Path)
	cmd.Args, cmd.Env, cmd.ExtraFiles, cmd.SysProcAttr = c.Args, c.Env, []*os.File{child}, c.Sys
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer cmd.Wait()
	defer stdin.Close()
	if err := Started(lifeline, sh); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "1\n" {
		t.Errorf("the program's parent is %q (%v), want 1, its namespace's init", line, err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var nspid []string
	for _, l := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(l, "NSpid:"); ok {
			nspid = strings.Fields(rest)
		}
	}
	if want := []string{strconv.Itoa(cmd.Process.Pid), "1"}; !slices.Equal(nspid, want) {
		t.Errorf("the shepherd's pids are %v, want %v: it is not the namespace's init", nspid, want)
	}
}

// A start refused its namespaces (as a container may refuse user
// namespaces where no sysctl says so) is tried again without them, and
// the shepherd told why, for the plugin's log; unless the sandbox
// requires them, or the failure is not theirs.
func TestWithoutNamespaces(t *testing.T) {
	refused := &os.PathError{Op: "fork/exec", Path: self, Err: syscall.EPERM}
	wrap := func(s *Sandbox) Command {
		c, lifeline, child, err := Wrap(Command{Path: "/bin/true", Args: []string{"true"}, Env: []string{"A=1"}, Sandbox: s})
		if err != nil {
			t.Fatal(err)
		}
		lifeline.Close()
		child.Close()
		if c.Sys == nil || c.Sys.Cloneflags&syscall.CLONE_NEWPID == 0 {
			t.Fatalf("no namespaces to start the shepherd in: %+v", c.Sys)
		}
		// A vfork, whose cost is not the host's memory; which a parent
		// must not be asked to write ID maps in (it is suspended).
		const vfork = syscall.CLONE_VM | syscall.CLONE_VFORK
		if c.Sys.Cloneflags&vfork != vfork || c.Sys.UidMappings != nil || c.Sys.GidMappings != nil {
			t.Fatalf("the shepherd is not started by a vfork: %+v", c.Sys)
		}
		return c
	}
	c, err := WithoutNamespaces(wrap(&Sandbox{}), refused)
	if err != nil || c.Sys != nil || !slices.Contains(c.Env, lessKey+"="+syscall.EPERM.Error()) {
		t.Errorf("refused: %v, %+v, %q", err, c.Sys, c.Env)
	}
	if _, err := WithoutNamespaces(wrap(&Sandbox{Require: true}), refused); err == nil || !strings.Contains(err.Error(), "sandbox.require is set") {
		t.Errorf("refused, required: %v", err)
	}
	missing := &os.PathError{Op: "fork/exec", Path: self, Err: syscall.ENOENT}
	if _, err := WithoutNamespaces(wrap(&Sandbox{}), missing); err != missing {
		t.Errorf("no shepherd: %v, want %v", err, missing)
	}
	// An LSM's refusal, or a kernel without them, is a refusal too.
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EINVAL} {
		if c, err := WithoutNamespaces(wrap(&Sandbox{}), &os.PathError{Op: "fork/exec", Path: self, Err: errno}); err != nil || c.Sys != nil {
			t.Errorf("%v: %v, %+v: want a start without namespaces", errno, err, c.Sys)
		}
	}
	// A limit reached (one a plugin may have exhausted on purpose, by
	// holding namespaces of its own), or memory, is not: the start fails.
	exhausted := []syscall.Errno{syscall.EAGAIN, syscall.ENOMEM, syscall.EUSERS}
	if userNamespaces() == "" {
		exhausted = append(exhausted, syscall.ENOSPC) // and no sysctl says 0
	}
	for _, errno := range exhausted {
		failed := &os.PathError{Op: "fork/exec", Path: self, Err: errno}
		if _, err := WithoutNamespaces(wrap(&Sandbox{}), failed); err != failed {
			t.Errorf("%v: %v, want the start to fail with it", errno, err)
		}
	}
}

// The end of the lifeline, which is what the host's death amounts to
// (SIGKILL included), ends a confined program's whole tree: what left its
// session and its group too.
func TestConfinedTreeEndsWithTheLifeline(t *testing.T) {
	needConfinement(t)
	sh := lookPath(t, "sh")
	s := &Sandbox{Read: SystemRead, Write: SystemWrite}
	script := `setsid sleep 60 & (sleep 60 &); echo ready; read x`
	c, lifeline, child, err := Wrap(Command{Path: sh, Args: []string{"sh", "-c", script}, Env: os.Environ(), Sandbox: s})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.Path)
	cmd.Args, cmd.Env, cmd.ExtraFiles, cmd.SysProcAttr = c.Args, c.Env, []*os.File{child}, c.Sys
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	if err := Started(lifeline, sh); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	// The tree, as the host sees it: every process in the shepherd's PID
	// namespace.
	ns, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	tree := func() (pids []string) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns {
					pids = append(pids, e.Name())
				}
			}
		}
		return pids
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(tree()) < 4 && time.Now().Before(deadline) { // the shepherd, sh, two sleeps
		time.Sleep(10 * time.Millisecond)
	}
	if got := tree(); len(got) < 4 {
		t.Fatalf("the tree is %v, want the shepherd, sh and two sleeps", got)
	}
	lifeline.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the shepherd outlived its lifeline")
	}
	for len(tree()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := tree(); len(got) > 0 {
		t.Errorf("%v outlived the lifeline", got)
	}
}

// A grant the kernel takes no rule for (a namespace file: EBADFD) is
// left out, and said, and costs nothing else: the rest of the domain
// holds.
func TestConfinedGrantRefusedIsLeftOut(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("no Landlock here")
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Sandbox{Read: append(slices.Clone(SystemRead), "/proc/self/ns/net"), Write: SystemWrite}
	out, err := confined(t, s, `cat `+secret+` 2>/dev/null && echo read; echo done`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(out, "read") || !strings.Contains(out, "done") {
		t.Errorf("output %q: a path not granted was readable", out)
	}
	if !strings.Contains(out, "bingo: the sandbox grant of /proc/self/ns/net is left out: landlock_add_rule: ") {
		t.Errorf("output %q: the grant left out is not said", out)
	}
}

// A descriptor the host inherited without close-on-exec (as from a
// terminal or an IDE) does not reach the plugin, confined or not: it
// starts with 0, 1 and 2, and whatever it opens itself.
func TestInheritedDescriptorsStayOut(t *testing.T) {
	leak := filepath.Join(t.TempDir(), "leak")
	if err := os.WriteFile(leak, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(leak, syscall.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, s := range []*Sandbox{nil, {Read: SystemRead, Write: SystemWrite}} {
		if s != nil && LandlockABI() < 1 {
			continue
		}
		out, err := confined(t, s, `ls -l /proc/self/fd`)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			name, target, ok := strings.Cut(line, " -> ")
			if !ok {
				continue
			}
			fields := strings.Fields(name)
			n, _ := strconv.Atoi(fields[len(fields)-1])
			if n > 2 && !strings.HasPrefix(target, "/proc/") {
				t.Errorf("confined %v: the plugin holds descriptor %d, %s: %s", s != nil, n, target, out)
			}
		}
	}
}

// A confined program has no capability, whether bingo runs as root (as
// the tests here may) or not: none effective, permitted, inheritable or
// ambient.
func TestConfinedHasNoCapabilities(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("no Landlock here")
	}
	out, err := confined(t, &Sandbox{Read: SystemRead, Write: SystemWrite}, `cat /proc/self/status`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "Cap") || name == "CapBnd" {
			continue
		}
		seen++
		if v, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64); err != nil || v != 0 {
			t.Errorf("%s: %s, want 0 (running as uid %d)", name, strings.TrimSpace(value), os.Getuid())
		}
	}
	if seen != 4 {
		t.Errorf("read %d capability sets, want 4: %s", seen, out)
	}
}

// A signal the program sends its shepherd does nothing, where Landlock
// (before ABI 6) does not refuse it: the shepherd, its namespace's init,
// still passes the program's exit on and removes its TMPDIR. And an
// unconfined program's shepherd, which is its parent, the same.
func TestSignalsToTheShepherdDoNothing(t *testing.T) {
	script := func(shepherd string) string {
		return `echo "$TMPDIR"; for s in QUIT TERM HUP INT ABRT USR1 TRAP SYS; do kill -$s ` + shepherd + ` || exit 9; done; sleep 0.2; exit 3`
	}
	check := func(name, out string, err error) {
		t.Helper()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("%s: exit 3 came back as %v: %s", name, err, out)
		}
	}
	out, err := confined(t, nil, script("$PPID"))
	check("unconfined", out, err)
	needConfinement(t)
	out, err = confined(t, &Sandbox{Read: SystemRead, Write: SystemWrite, abi: 5}, script("1"))
	check("confined, Landlock ABI 5", out, err)
	tmp, _, _ := strings.Cut(out, "\n")
	if _, serr := os.Stat(tmp); !strings.HasPrefix(tmp, "/") || !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the program's TMPDIR %q is left (%v)", tmp, serr)
	}
}

// A confined program can make no user namespace of its own: not to gain
// the capabilities one gives, nor to hold a share of the person's count
// of them.
func TestConfinedMakesNoUserNamespace(t *testing.T) {
	needConfinement(t)
	unshare := lookPath(t, "unshare")
	// Outside, it can: the test would prove nothing otherwise.
	if out, err := exec.Command(unshare, "-U", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -U fails here too: %v: %s", err, out)
	}
	out, err := confined(t, &Sandbox{Read: SystemRead, Write: SystemWrite}, `cat /proc/sys/user/max_user_namespaces; if unshare -U true; then echo made; fi`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Contains(out, "made") || !strings.HasPrefix(out, "0\n") {
		t.Errorf("output %q: the program made a user namespace", out)
	}
}

// Where the kernel has Landlock but the domain cannot be applied, the
// program does not start, rather than start with no file confinement:
// here because the host is in Landlock's most nested domains already (16:
// one more is E2BIG).
func TestConfinedUnappliedRefusesTheStart(t *testing.T) {
	abi := LandlockABI()
	if abi < 1 {
		t.Skip("no Landlock here")
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		// This goroutine's thread, which starts the shepherd, is nested;
		// locked for good, it ends with the goroutine.
		runtime.LockOSThread()
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
			done <- result{err: errno}
			return
		}
		for range 16 { // LANDLOCK_MAX_NUM_LAYERS, each granting every right on /
			attr := rulesetAttr{handledFS: handledFS(abi)}
			fd, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
			if errno != 0 {
				done <- result{err: errno}
				return
			}
			err := allow(int(fd), "/", attr.handledFS)
			if err == nil {
				if _, _, errno := syscall.RawSyscall(sysLandlockRestrictSelf, fd, 0, 0); errno != 0 {
					err = errno
				}
			}
			_ = syscall.Close(int(fd))
			if err != nil {
				done <- result{err: err}
				return
			}
		}
		var out strings.Builder
		c, lifeline, child, err := Wrap(Command{Path: "/bin/sh", Args: []string{"sh", "-c", "echo ran"}, Env: os.Environ(), Sandbox: &Sandbox{Read: SystemRead, Write: SystemWrite}})
		if err != nil {
			done <- result{err: err}
			return
		}
		defer lifeline.Close()
		cmd := exec.Command(c.Path)
		cmd.Args, cmd.Env, cmd.ExtraFiles, cmd.SysProcAttr = c.Args, c.Env, []*os.File{child}, c.Sys
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Start()
		child.Close()
		if err == nil {
			err = Started(lifeline, "/bin/sh")
			_ = cmd.Wait()
		}
		done <- result{out.String(), err}
	}()
	r := <-done
	if r.err == nil || !strings.Contains(r.out, "bingo: not started: its file-system sandbox could not be applied: landlock_restrict_self: ") || strings.Contains(r.out, "ran") {
		t.Errorf("a domain that cannot be applied: %v: %q, want no start, and why in the log", r.err, r.out)
	}
}

// Where close_range is missing, every descriptor /proc/self/fd lists from
// 3 up is marked close-on-exec all the same.
func TestCloseOnExecListed(t *testing.T) {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	closeOnExecListed()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d: flags %#x (%v), want FD_CLOEXEC", fd, flags, errno)
	}
}

// needConfinement skips a test where a program cannot be confined fully:
// no Landlock, or no user namespaces.
func needConfinement(t *testing.T) {
	t.Helper()
	if LandlockABI() < 1 || userNamespaces() != "" {
		t.Skip("no Landlock or user namespaces here")
	}
}

// lookPath is the program name on PATH, or skips the test without it.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skip(err)
	}
	return p
}
