package shepherd

import (
	"os"
	"syscall"
	"unsafe"
)

// Landlock (Documentation/userspace-api/landlock.rst), called directly:
// three system calls and their structures, with no package beyond what
// the shepherd imports already (see run_linux.go). A ruleset says which
// kinds of access it handles; of those, only what a rule grants beneath a
// path (or to a port) is allowed once the thread restricts itself, and
// the domain passes to every process it starts. Kinds a kernel does not
// know are left out of the ruleset, which is why each depends on the ABI.
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	landlockCreateRulesetVersion = 1 << 0
	landlockRulePathBeneath      = 1
	landlockRuleNetPort          = 2

	prSetNoNewPrivs = 38

	oPath = 0x200000 // O_PATH on every port Go runs on but the rare ones (alpha, parisc, sparc)
)

// File-system access rights, by the ABI that added them.
const (
	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13 // ABI 2
	fsTruncate   = 1 << 14 // ABI 3
	fsIoctlDev   = 1 << 15 // ABI 5

	netBindTCP    = 1 << 0 // ABI 4
	netConnectTCP = 1 << 1 // ABI 4

	scopeAbstractUnix = 1 << 0 // ABI 6
	scopeSignal       = 1 << 1 // ABI 6
)

// fsFile is what may be granted on a file (rather than a directory).
const fsFile = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev

type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

type pathBeneathAttr struct {
	allowed  uint64
	parentFd int32
	_        [4]byte // the kernel's struct is packed: 12 bytes are read
}

type netPortAttr struct {
	allowed uint64
	port    uint64
}

// LandlockABI returns the Landlock ABI version the kernel offers, or 0
// where it has none (older than 5.13, or not enabled at boot).
func LandlockABI() int {
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handled returns the file-system rights an ABI knows.
func handledFS(abi int) uint64 {
	h := uint64(fsExecute | fsWriteFile | fsReadFile | fsReadDir | fsRemoveDir | fsRemoveFile |
		fsMakeChar | fsMakeDir | fsMakeReg | fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym)
	if abi >= 2 {
		h |= fsRefer
	}
	if abi >= 3 {
		h |= fsTruncate
	}
	if abi >= 5 {
		h |= fsIoctlDev
	}
	return h
}

// confine restricts the calling thread, and so every process it starts
// from now on, to what s allows: no_new_privs (which Landlock requires,
// and which keeps a set-user-ID program from lifting the domain), then a
// Landlock domain. TCP is part of it unless s grants any network (abi 4);
// where the network is granted by host, only the ports those hosts are
// reached on are open (the egress is the proxy's to filter); signals to,
// and abstract unix sockets of, processes outside the domain are out of
// reach (abi 6). ptrace of them, and so their /proc entries' secrets
// (environ, mem, fd), is refused by every Landlock ABI. It returns the
// ABI in force, and an error if none could be applied; a path that does
// not exist is skipped.
func confine(s *Sandbox, ports []uint16) (int, error) {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return 0, &os.SyscallError{Syscall: "prctl(PR_SET_NO_NEW_PRIVS)", Err: errno}
	}
	abi := LandlockABI()
	if s.abi > 0 && s.abi < abi {
		abi = s.abi
	}
	if abi < 1 {
		return 0, &os.SyscallError{Syscall: "landlock_create_ruleset", Err: syscall.ENOSYS}
	}
	attr := rulesetAttr{handledFS: handledFS(abi)}
	if abi >= 4 && !s.AnyNetwork() {
		attr.handledNet = netBindTCP | netConnectTCP
	}
	if abi >= 6 {
		attr.scoped = scopeAbstractUnix | scopeSignal
	}
	fd, _, errno := syscall.RawSyscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return 0, &os.SyscallError{Syscall: "landlock_create_ruleset", Err: errno}
	}
	defer syscall.Close(int(fd))
	read := uint64(fsExecute | fsReadFile | fsReadDir)
	grant := func(paths []string, access uint64) {
		for _, p := range paths {
			if err := allow(int(fd), p, access); err != nil {
				_, _ = os.Stderr.WriteString("bingo: the sandbox grant of " + p + " is left out: " + err.Error() + "\n")
			}
		}
	}
	grant(s.Read, read&attr.handledFS)
	grant(s.Write, attr.handledFS)
	grant(s.List, fsReadDir)
	if attr.handledNet != 0 {
		for _, port := range ports {
			rule := netPortAttr{allowed: netConnectTCP, port: uint64(port)}
			if _, _, errno := syscall.RawSyscall6(sysLandlockAddRule, fd, landlockRuleNetPort,
				uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
				return 0, &os.SyscallError{Syscall: "landlock_add_rule", Err: errno}
			}
		}
	}
	if _, _, errno := syscall.RawSyscall(sysLandlockRestrictSelf, fd, 0, 0); errno != 0 {
		return 0, &os.SyscallError{Syscall: "landlock_restrict_self", Err: errno}
	}
	return abi, nil
}

// allow adds a rule granting access beneath path (or, for a file, to the
// file: only the rights a file can have).
func allow(ruleset int, path string, access uint64) error {
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil // nothing there to grant
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= fsFile
	}
	rule := pathBeneathAttr{allowed: access, parentFd: int32(fd)}
	if _, _, errno := syscall.RawSyscall6(sysLandlockAddRule, uintptr(ruleset), landlockRulePathBeneath,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return &os.SyscallError{Syscall: "landlock_add_rule", Err: errno}
	}
	return nil
}
