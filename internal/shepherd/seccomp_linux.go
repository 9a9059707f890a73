package shepherd

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// Where the plugin has no network namespace of its own (user namespaces
// refused), Landlock holds back only TCP: a seccomp filter then refuses,
// with EPERM, every socket but a unix one or a TCP one, so no UDP
// datagram and no DNS query leaves, nor a raw, packet or netlink socket
// opens, and the TCP left is what Landlock's connect rules allow (the
// egress proxy's port, if any).
//
// The filter is a short classic BPF program, assembled here and loaded
// with prctl, rather than built with github.com/elastic/go-seccomp-bpf:
// that package's syscall tables are initialised in every process that
// links it, so every shepherd would start 0.16 ms later and
// hold 164 KB more heap (run_linux.go says why this package imports
// little); it sends a system call of a foreign architecture to the
// policy's default action, which here is to allow; and it brings
// golang.org/x/net, whose requirements move golang.org/x/text, that
// rendering depends on, ahead by 28 versions.
//
// What it refuses, and why each:
//   - socket and socketpair of any family but AF_UNIX, AF_INET and
//     AF_INET6, and of those two any type but SOCK_STREAM with protocol 0
//     or IPPROTO_TCP: UDP (and so DNS), raw and ICMP sockets, SCTP and
//     MPTCP (which Landlock's TCP rules do not cover), AF_PACKET, and
//     AF_NETLINK. Name resolution does not need netlink: glibc asks
//     NETLINK_ROUTE which address families the machine has, and, refused,
//     assumes both, as it does where netlink is missing. Allowing it would
//     show the machine's interfaces (and, to a plugin run by root, let it
//     change its routes), and its NETLINK_SOCK_DIAG every connection of
//     the machine. (TCP Fast Open, a connect made by sendto, Landlock
//     checks as it does a connect.)
//   - io_uring_setup: a ring opens sockets (IORING_OP_SOCKET) without the
//     socket system call; programs that use rings (libuv) fall back.
//   - the x32 ABI (ENOSYS, as on the kernels built without it), and a
//     system call of another architecture (the i386 int 0x80 of an
//     x86-64 process, whose socketcall hides its arguments), which ends
//     the process: its socket calls could not be held back.

// Linux constants the syscall package does not name.
const (
	prSetSeccomp      = 22 // prctl PR_SET_SECCOMP
	prGetSeccomp      = 21 // prctl PR_GET_SECCOMP
	seccompModeFilter = 2
	seccompRetKill    = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	seccompRetErrno   = 0x00050000
	seccompRetAllow   = 0x7fff0000
	sysIoUringSetup   = 425 // the same on every architecture
	x32SyscallBit     = 0x40000000
	seccompDataNr     = 0
	seccompDataArch   = 4
	seccompDataArgs   = 16
	auditArchX86_64   = 0xc000003e
	auditArchAarch64  = 0xc00000b7
	socketTypeMask    = 0xf
	ipprotoTCP        = 6
)

// seccompArch returns the audit architecture of the running binary, or
// 0 where the filter is not written for it (the argument offsets below
// are a little-endian machine's).
func seccompArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return auditArchX86_64
	case "arm64":
		return auditArchAarch64
	}
	return 0
}

// SeccompAvailable reports whether the socket filter can be installed
// here: a kernel with seccomp filters, on an architecture it is written
// for.
func SeccompAvailable() bool {
	if seccompArch() == 0 {
		return false
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetSeccomp, 0, 0)
	return errno == 0
}

// bpfInsn is one instruction of the filter, with its jumps by label:
// "" is the next instruction.
type bpfInsn struct {
	label  string
	code   uint16
	k      uint32
	jt, jf string
}

// assemble resolves the labels of prog, whose jumps all go forward.
func assemble(prog []bpfInsn) []syscall.SockFilter {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	out := make([]syscall.SockFilter, len(prog))
	for i, in := range prog {
		jump := func(label string) uint8 {
			if label == "" {
				return 0
			}
			to, ok := at[label]
			if !ok || to <= i || to-i-1 > 255 {
				panic("seccomp filter: bad jump to " + label)
			}
			return uint8(to - i - 1)
		}
		out[i] = syscall.SockFilter{Code: in.code, Jt: jump(in.jt), Jf: jump(in.jf), K: in.k}
	}
	return out
}

// socketFilter is the program that refuses what the comment above says.
func socketFilter(audit uint32) []syscall.SockFilter {
	const (
		ld  = syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS
		jeq = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		jge = syscall.BPF_JMP | syscall.BPF_JGE | syscall.BPF_K
		and = syscall.BPF_ALU | syscall.BPF_AND | syscall.BPF_K
		ret = syscall.BPF_RET | syscall.BPF_K
	)
	// The low half of a 64-bit argument, which is all the kernel reads
	// of an int.
	arg := func(n uint32) uint32 { return seccompDataArgs + 8*n }
	return assemble([]bpfInsn{
		{code: ld, k: seccompDataArch},
		{code: jeq, k: audit, jf: "foreign"},
		{code: ld, k: seccompDataNr},
		{code: jge, k: x32SyscallBit, jt: "nosys"},
		{code: jeq, k: syscall.SYS_SOCKET, jt: "family"},
		{code: jeq, k: syscall.SYS_SOCKETPAIR, jt: "family"},
		{code: jeq, k: sysIoUringSetup, jt: "deny", jf: "allow"},

		{label: "family", code: ld, k: arg(0)},
		{code: jeq, k: syscall.AF_UNIX, jt: "allow"},
		{code: jeq, k: syscall.AF_INET, jt: "inet"},
		{code: jeq, k: syscall.AF_INET6, jt: "inet", jf: "deny"},
		{label: "inet", code: ld, k: arg(1)},
		{code: and, k: socketTypeMask},
		{code: jeq, k: syscall.SOCK_STREAM, jf: "deny"},
		{code: ld, k: arg(2)},
		{code: jeq, k: 0, jt: "allow"},
		{code: jeq, k: ipprotoTCP, jt: "allow", jf: "deny"},

		{label: "allow", code: ret, k: seccompRetAllow},
		{label: "deny", code: ret, k: seccompRetErrno | uint32(syscall.EPERM)},
		{label: "nosys", code: ret, k: seccompRetErrno | uint32(syscall.ENOSYS)},
		{label: "foreign", code: ret, k: seccompRetKill},
	})
}

// holdSockets installs the socket filter on the calling thread (and so
// on every process it starts), as the shepherd does beside Landlock on
// the thread that starts the program, when the program has no user
// namespace (userns false), so no network namespace of its own, and is
// not granted the whole network. A failure is returned under
// sandbox.require, which then refuses to start the program, and said in
// the plugin's log otherwise.
func holdSockets(s *Sandbox, userns bool) error {
	if userns || s.AnyNetwork() {
		return nil
	}
	if err := filterSockets(); err != nil {
		if s.Require {
			return err
		}
		_, _ = os.Stderr.WriteString("bingo: the plugin's UDP, DNS and other sockets are not held back: " + err.Error() + "\n")
	}
	return nil
}

// filterSockets installs socketFilter on the calling thread.
func filterSockets() error {
	audit := seccompArch()
	if audit == 0 {
		return &os.SyscallError{Syscall: "seccomp (" + runtime.GOARCH + ")", Err: syscall.ENOSYS}
	}
	// A filter needs no_new_privs, which confine has set unless it
	// failed at once.
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return &os.SyscallError{Syscall: "prctl(PR_SET_NO_NEW_PRIVS)", Err: errno}
	}
	filter := socketFilter(audit)
	prog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return &os.SyscallError{Syscall: "prctl(PR_SET_SECCOMP)", Err: errno}
	}
	runtime.KeepAlive(filter)
	return nil
}
