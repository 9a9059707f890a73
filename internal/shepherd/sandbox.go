package shepherd

import "strings"

// Sandbox is what a program started under a shepherd may reach, when it
// is confined (Command.Sandbox): the shepherd starts it through a stage
// (see sandbox_linux.go) that applies this before the program runs.
// Everything not named is out of reach: no other file is readable, none
// writable, and no network unless Network grants it.
type Sandbox struct {
	// Read are files and directories the program may read and execute,
	// with everything beneath a directory.
	Read []string
	// Write are files and directories it may also write, create in and
	// remove from.
	Write []string
	// List are directories whose entries may be listed, beneath them
	// too, but whose files may not be read unless Read or Write says so.
	List []string
	// Network lists what it may connect to, as "host:port", or "*" for
	// anything; empty, no network at all.
	Network []string
	// Proxy is the loopback port ("127.0.0.1:port") of the egress proxy
	// that serves Network's hosts (internal/egress), or "". The program
	// is told of it by the proxy variables, and reaches nothing else: in
	// its namespace, the same port on its own loopback is forwarded to
	// it by the shepherd.
	Proxy string
	// Require refuses to start the program unless every mechanism of the
	// default confinement is in force, instead of starting it with less.
	Require bool
}

// AnyNetwork reports whether the sandbox lets the program reach any host.
func (s *Sandbox) AnyNetwork() bool {
	for _, n := range s.Network {
		if n == "*" {
			return true
		}
	}
	return false
}

// encode writes s as the stage reads it from its environment: one item a
// line, its kind first. A path holding a line break cannot be said this
// way and is left out: it can only narrow what the program reaches.
func (s *Sandbox) encode() string {
	var b strings.Builder
	put := func(kind byte, v string) {
		if strings.ContainsAny(v, "\n\x00") {
			return
		}
		b.WriteByte(kind)
		b.WriteString(v)
		b.WriteByte('\n')
	}
	for _, p := range s.Read {
		put('r', p)
	}
	for _, p := range s.Write {
		put('w', p)
	}
	for _, p := range s.List {
		put('l', p)
	}
	for _, n := range s.Network {
		put('n', n)
	}
	if s.Proxy != "" {
		put('p', s.Proxy)
	}
	if s.Require {
		put('q', "")
	}
	return b.String()
}

// decodeSandbox reads what encode wrote.
func decodeSandbox(text string) *Sandbox {
	s := &Sandbox{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		v := line[1:]
		switch line[0] {
		case 'r':
			s.Read = append(s.Read, v)
		case 'w':
			s.Write = append(s.Write, v)
		case 'l':
			s.List = append(s.List, v)
		case 'n':
			s.Network = append(s.Network, v)
		case 'p':
			s.Proxy = v
		case 'q':
			s.Require = true
		}
	}
	return s
}
