package shepherd

import "strings"

// Sandbox is what a program started under a shepherd may reach, when it
// is confined (Command.Sandbox): the shepherd applies this before the
// program runs (see sandbox_linux.go).
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
	// it by the shepherd, through ProxySocket.
	Proxy string
	// ProxySocket is the path of the same proxy's unix socket, which the
	// shepherd, in the program's network namespace, reaches it by.
	ProxySocket string
	// Require refuses to start the program unless every mechanism of the
	// default confinement is in force, instead of starting it with less.
	Require bool

	// abi, if not 0, is the highest Landlock ABI the shepherd uses, as
	// on an older kernel: for this package's tests.
	abi int
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

// encode writes s as the shepherd reads it from its environment: one item a
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
	if s.ProxySocket != "" {
		put('s', s.ProxySocket)
	}
	if s.Require {
		put('q', "")
	}
	if s.abi > 0 && s.abi < 10 {
		put('a', string(rune('0'+s.abi)))
	}
	return b.String()
}

// SystemRead is what every confined plugin may read: where programs and
// libraries load from, certificate stores, name resolution and the
// files a C library or an interpreter reads at start, and /proc (whose
// secrets about other processes, bingo's environment and memory among
// them, Landlock keeps by refusing ptrace of anything outside the plugin's
// domain). A path missing here is skipped.
var SystemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/services", "/etc/protocols",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/mime.types",
	"/etc/alternatives", "/etc/os-release", "/etc/debian_version", "/etc/python3", "/etc/npmrc", "/etc/gitconfig",
	"/run/systemd/resolve",
	"/proc", "/sys/fs/cgroup", "/sys/devices/system/cpu",
	"/dev/urandom", "/dev/random",
}

// SystemWrite is the devices every program may write.
var SystemWrite = []string{"/dev/null", "/dev/zero", "/dev/full"}

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
		case 's':
			s.ProxySocket = v
		case 'q':
			s.Require = true
		case 'a':
			if len(v) == 1 && v[0] > '0' && v[0] <= '9' {
				s.abi = int(v[0] - '0')
			}
		}
	}
	return s
}
