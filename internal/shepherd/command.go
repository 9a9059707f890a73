package shepherd

// Command is a program to start: the file to execute, its whole argv, and
// its whole environment (nil: the host's).
type Command struct {
	Path string
	Args []string
	Env  []string
}
