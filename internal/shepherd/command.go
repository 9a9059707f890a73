package shepherd

import "syscall"

// Command is a program to start: the file to execute, its whole argv, and
// its whole environment (nil: the host's).
type Command struct {
	Path string
	Args []string
	Env  []string
	// Sandbox, if not nil, confines the program (see Sandbox); nil runs
	// it with the person's authority, as before.
	Sandbox *Sandbox
	// Sys, in the Command Wrap returns, is how to start the shepherd
	// beyond what the caller sets (Setpgid): for a confined program, the
	// namespaces of its own that the shepherd starts in (Cloneflags, the
	// ID maps, the capabilities it keeps there); nil for none.
	Sys *syscall.SysProcAttr
}
