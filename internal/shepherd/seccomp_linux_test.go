package shepherd

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// socketFilterKey, in a test binary's environment, makes TestSocketFilter
// the child that tries each call: with the filter installed when the
// value is "filter", without it otherwise.
const socketFilterKey = "BINGO_TEST_SOCKET_FILTER"

// socketCalls are the calls the filter is about, each with whether it
// refuses it.
func socketCalls() []struct {
	name    string
	refused bool
	call    func() error
} {
	sock := func(domain, typ, proto uintptr) func() error {
		return func() error {
			fd, _, errno := syscall.RawSyscall(syscall.SYS_SOCKET, domain, typ, proto)
			if errno != 0 {
				return errno
			}
			return syscall.Close(int(fd))
		}
	}
	const ipprotoMPTCP, ipprotoICMP, ethPAll = 262, 1, 0x0300
	return []struct {
		name    string
		refused bool
		call    func() error
	}{
		{"tcp", false, sock(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)},
		{"tcp6", false, sock(syscall.AF_INET6, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, syscall.IPPROTO_TCP)},
		{"unix", false, sock(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)},
		{"socketpair", false, func() error {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err == nil {
				syscall.Close(fds[0])
				syscall.Close(fds[1])
			}
			return err
		}},
		{"udp", true, sock(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)},
		{"udp6", true, sock(syscall.AF_INET6, syscall.SOCK_DGRAM, 0)},
		// The kernel reads an int: the high half changes nothing.
		{"udp, high bits", true, sock(1<<32|syscall.AF_INET, 1<<32|syscall.SOCK_DGRAM, 0)},
		{"icmp", true, sock(syscall.AF_INET, syscall.SOCK_DGRAM, ipprotoICMP)},
		{"raw", true, sock(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)},
		{"mptcp", true, sock(syscall.AF_INET, syscall.SOCK_STREAM, ipprotoMPTCP)},
		{"packet", true, sock(syscall.AF_PACKET, syscall.SOCK_RAW, ethPAll)},
		{"netlink", true, sock(syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_ROUTE)},
		{"io_uring", true, func() error {
			var params [120]byte // struct io_uring_params
			fd, _, errno := syscall.RawSyscall(sysIoUringSetup, 1, uintptr(unsafe.Pointer(&params)), 0)
			if errno != 0 {
				return errno
			}
			return syscall.Close(int(fd))
		}},
	}
}

// The filter refuses with EPERM what it is meant to, allows the rest, and
// binds the thread that installs it. Without it every call succeeds:
// what the filter changes is what it refuses.
func TestSocketFilter(t *testing.T) {
	if mode, ok := os.LookupEnv(socketFilterKey); ok {
		socketFilterChild(mode == "filter")
		return
	}
	if !SeccompAvailable() {
		t.Skip("no seccomp filter here")
	}
	for _, mode := range []string{"filter", "none"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSocketFilter$")
		cmd.Env = append(os.Environ(), socketFilterKey+"="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", mode, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, got, ok := strings.Cut(line, ": ")
			if !ok || name == "PASS" {
				continue
			}
			want := "allowed"
			if mode == "filter" && strings.HasPrefix(name, "refused ") {
				want = syscall.EPERM.Error()
			}
			if got != want {
				if want == "allowed" && mode == "none" && got != syscall.EPERM.Error() {
					// Not the filter's to say (a kernel without
					// io_uring, no CAP_NET_RAW): only EPERM would
					// make the check worthless.
					continue
				}
				t.Errorf("%s, %s: %s, want %s", mode, strings.TrimPrefix(strings.TrimPrefix(name, "refused "), "allowed "), got, want)
			}
		}
	}
}

// socketFilterChild tries each call on one thread, with or without the
// filter, and writes "refused|allowed NAME: result" for each.
func socketFilterChild(filter bool) {
	calls := socketCalls()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Locked and never unlocked: the thread ends with the goroutine,
		// and its filter with it.
		runtime.LockOSThread()
		if filter {
			if err := filterSockets(); err != nil {
				os.Stdout.WriteString("filterSockets: " + err.Error() + "\n")
				return
			}
		}
		for _, c := range calls {
			kind := "allowed "
			if c.refused {
				kind = "refused "
			}
			result := "allowed"
			if err := c.call(); err != nil {
				result = err.Error()
			}
			os.Stdout.WriteString(kind + c.name + ": " + result + "\n")
		}
	}()
	<-done
}
