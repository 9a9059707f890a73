package wasm

import (
	"golang.org/x/sys/unix"
)

// Magic numbers of windows golang.org/x/sys/unix has no constant for
// (linux/magic.h).
const (
	configfsMagic = 0x62656570
	fusectlMagic  = 0x65735543
	mqueueMagic   = 0x19800202
)

// hostFSes are the file systems that are windows onto the host itself,
// not data: its processes (proc: /proc/<bingo>/environ, and
// /proc/<bingo>/mem, writable into bingo), its kernel and hardware (sysfs,
// debugfs, tracefs, securityfs and the security modules', configfs,
// efivarfs, pstore, binfmt_misc, bpf, cgroups, resctrl, fusectl, message
// queues) and its terminals (devpts). One mounted anywhere, a chroot's
// or a container's proc in the working directory, is as much the host's
// as /proc is, so what lies on one is never served, whatever its path.
// (devtmpfs is a tmpfs by its magic: its device nodes are refused as
// devices.)
var hostFSes = map[uint32]string{
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	unix.DEBUGFS_MAGIC:         "debugfs",
	unix.TRACEFS_MAGIC:         "tracefs",
	unix.SECURITYFS_MAGIC:      "securityfs",
	unix.SELINUX_MAGIC:         "selinuxfs",
	unix.SMACK_MAGIC:           "smackfs",
	unix.BPF_FS_MAGIC:          "bpf",
	unix.CGROUP_SUPER_MAGIC:    "cgroup",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.RDTGROUP_SUPER_MAGIC:  "resctrl",
	unix.EFIVARFS_MAGIC:        "efivarfs",
	unix.PSTOREFS_MAGIC:        "pstore",
	unix.BINFMTFS_MAGIC:        "binfmt_misc",
	unix.NSFS_MAGIC:            "nsfs",
	unix.USBDEVICE_SUPER_MAGIC: "usbfs",
	configfsMagic:              "configfs",
	fusectlMagic:               "fusectl",
	mqueueMagic:                "mqueue",
}

// hostFSOf names the host's file system the open directory or file fd
// lies on, or is "". One whose kind cannot be told is refused too.
func hostFSOf(fd int) string {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return "an unknown file system"
	}
	return hostFSes[uint32(st.Type)]
}

// hostFSAt is hostFSOf for a path (links followed); "" when it cannot be
// looked at (it does not exist yet).
func hostFSAt(p string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return ""
	}
	return hostFSes[uint32(st.Type)]
}
