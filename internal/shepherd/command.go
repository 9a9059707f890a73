package shepherd

// Command is a program to start: the file to execute, its whole argv, and
// its whole environment (nil: the host's).
type Command struct {
	Path string
	Args []string
	Env  []string
	// Sandbox, if not nil, confines the program (see Sandbox); nil runs
	// it with the person's authority, as before.
	Sandbox *Sandbox
}
