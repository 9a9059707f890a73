package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/oauth"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/transport/mcphttp"
)

// mcpOptions are the flags of bingo mcp's own subcommands.
type mcpOptions struct {
	mcpEnv, mcpHeaders multi
	mcpURL             string
	mcpProject         bool
}

func (o *options) mcpFlags(fs *flag.FlagSet) {
	fs.Var(&o.mcpEnv, "env", "with mcp add: set `K=V` in the server's environment (repeatable; ${VAR} in V is yours, read when it starts)")
	fs.BoolVar(&o.mcpProject, "project", false, "with mcp add and remove: the project's .mcp.json rather than your own plugins")
	fs.StringVar(&o.mcpURL, "url", "", "with mcp add: a remote server's Streamable HTTP `URL`")
	fs.Var(&o.mcpHeaders, "header", "with mcp add --url: send `'K: V'` with each request (repeatable; ${VAR} in V is yours, read when it starts)")
}

// mcpSubcommand runs bingo mcp add, list, remove and import: each writes
// or reads the plugin files of MCP servers, and starts nothing.
func mcpSubcommand(o options, rest []string, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(stderr, "bingo: no home directory: %v\n", err)
		return ExitError
	}
	cwd := o.cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			fmt.Fprintf(stderr, "bingo: %v\n", err)
			return ExitError
		}
	}
	m := mcpRun{o: o, home: home, cwd: cwd, stdout: stdout, stderr: stderr}
	form := ""
	if len(rest) > 0 {
		form = rest[0]
	}
	switch {
	case form == "add" && len(rest) >= 2:
		return m.add(rest[1], rest[2:], fs)
	case form == "list" && len(rest) == 1:
		return m.list()
	case form == "remove" && len(rest) == 2:
		return m.remove(rest[1])
	case form == "import" && len(rest) == 2:
		return m.importFile(rest[1])
	case form == "login" && len(rest) == 2:
		return m.login(rest[1])
	case form == "logout" && len(rest) == 2:
		return m.logout(rest[1])
	}
	return usageError(stderr, fs, "mcp", "mcp takes add NAME -- COMMAND [ARGS...], add NAME --url URL, list, remove NAME, import FILE, login NAME or logout NAME")
}

type mcpRun struct {
	o              options
	home, cwd      string
	stdout, stderr io.Writer
}

func (m mcpRun) fail(format string, args ...any) int {
	fmt.Fprintf(m.stderr, "bingo: mcp "+format+"\n", args...)
	return ExitError
}

// serverEntry is a server's entry as .mcp.json spells it.
type serverEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// add writes one server: to the person's plugins, or with --project to
// the project's .mcp.json.
func (m mcpRun) add(name string, command []string, fs *flag.FlagSet) int {
	e := serverEntry{URL: m.o.mcpURL}
	switch {
	case e.URL == "" && len(command) == 0:
		return usageError(m.stderr, fs, "mcp", "mcp add %s needs -- COMMAND [ARGS...] or --url URL", name)
	case e.URL != "" && len(command) > 0:
		return usageError(m.stderr, fs, "mcp", "mcp add takes a COMMAND or --url, not both")
	case e.URL != "" && len(m.o.mcpEnv) > 0:
		return usageError(m.stderr, fs, "mcp", "--env is for a server mcp add runs; a remote one takes --header")
	case e.URL == "" && len(m.o.mcpHeaders) > 0:
		return usageError(m.stderr, fs, "mcp", "--header is for a remote server (--url)")
	}
	if e.URL != "" {
		e.Type = "http"
		for _, h := range m.o.mcpHeaders {
			k, v, ok := strings.Cut(h, ":")
			if !ok {
				return usageError(m.stderr, fs, "mcp", "--header %q is not 'K: V'", h)
			}
			if e.Headers == nil {
				e.Headers = map[string]string{}
			}
			e.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	} else {
		e.Command, e.Args = command[0], command[1:]
		for _, kv := range m.o.mcpEnv {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageError(m.stderr, fs, "mcp", "--env %q is not K=V", kv)
			}
			if e.Env == nil {
				e.Env = map[string]string{}
			}
			e.Env[k] = v
		}
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return m.fail("add: %v", err)
	}
	if m.o.mcpProject {
		return m.addToProject(name, raw)
	}
	// The entry is read by the parser .mcp.json and import go through,
	// so that every way in means the same.
	file, _ := json.Marshal(map[string]map[string]json.RawMessage{"mcpServers": {name: raw}})
	servers, err := manifest.ParseMCPConfig(file, m.cwd)
	if err != nil {
		return m.fail("add: %v", err)
	}
	s := servers[0]
	if s.Err != nil {
		return m.fail("add: %v", s.Err)
	}
	path, err := m.writeUser(s)
	if err != nil {
		return m.fail("add: %v", err)
	}
	fmt.Fprintf(m.stdout, "added %s to your plugins (%s): %s\n", m.named(s), path, describe(s.Entry))
	return ExitOK
}

// named is the plugin's name, and the server's when that differs.
func (m mcpRun) named(s manifest.MCPServer) string {
	if s.Key == s.Name {
		return s.Name
	}
	return fmt.Sprintf("%s (server %q)", s.Name, render.Line(s.Key))
}

// addToProject writes the server into the project's .mcp.json, as written
// (nothing expanded or resolved): the file is the repository's.
func (m mcpRun) addToProject(name string, raw json.RawMessage) int {
	root := manifest.Project(m.home, m.cwd)
	if root == "" {
		return m.fail("add --project: not in a project: no directory at or above %s, short of your home directory, holds .bingo or .git", m.cwd)
	}
	file := filepath.Join(root, manifest.MCPFileName)
	servers, err := m.projectServers(file)
	if err != nil {
		return m.fail("add --project: %s: %v", file, err)
	}
	test, _ := json.Marshal(map[string]map[string]json.RawMessage{"mcpServers": {name: raw}})
	added, err := manifest.ParseMCPConfig(test, root)
	if err == nil {
		err = added[0].Err
	}
	if err != nil {
		return m.fail("add --project: %v", err)
	}
	for _, s := range servers {
		if s.Key == name || s.Name == added[0].Name {
			return m.fail("add --project: %s already has server %q; bingo mcp remove --project %s first", file, s.Key, s.Key)
		}
	}
	if _, err := manifest.SetMCPServer(file, name, raw); err != nil {
		return m.fail("add --project: %v", err)
	}
	fmt.Fprintf(m.stdout, "added %s to %s: %s (it runs once you trust the project: bingo trust)\n", m.named(added[0]), file, describe(added[0].Entry))
	return ExitOK
}

// projectServers reads the servers of a project's .mcp.json; none if it
// has none.
func (m mcpRun) projectServers(file string) ([]manifest.MCPServer, error) {
	data, err := capped.Read(file, manifest.MaxSize) // as the host reads it
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return manifest.ParseMCPConfig(data, filepath.Dir(file))
}

// writeUser writes s as a plugin of the person's layer,
// ~/.bingo/plugins/<name>/plugin.json, and checks it loads. A directory
// of that name already there is left alone. The file may hold a secret
// (a header or env value written out, as an imported file often has
// them): it is 0600, in a directory of its own that is 0700, and written
// whole under another name first.
func (m mcpRun) writeUser(s manifest.MCPServer) (string, error) {
	dir := filepath.Join(m.home, ".bingo", "plugins", s.Name)
	if _, err := os.Lstat(dir); err == nil {
		return "", fmt.Errorf("%s already exists; bingo mcp remove %s first", dir, s.Name)
	}
	data, err := json.MarshalIndent(struct {
		Name    string         `json:"name"`
		Version string         `json:"version"`
		Entry   manifest.Entry `json:"entry"`
	}{s.Name, "1", s.Entry}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	file := filepath.Join(dir, manifest.FileName)
	if err := diskrecord.Replace(file, append(data, '\n'), diskrecord.Options{Temp: "." + manifest.FileName + ".*.tmp"}); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	if _, err := manifest.Load(dir, manifest.LayerUser); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return file, nil
}

// describe is what a server runs, or reaches, on one line: never its
// headers' values nor its env's, which may hold secrets, nor its URL's
// userinfo or secret-looking query values (render.URL). e is as written:
// a ${VAR} shows as itself, never its value.
func describe(e manifest.Entry) string {
	if e.URL != "" {
		line := render.URL(e.URL)
		if len(e.Headers) > 0 {
			line += " (headers " + strings.Join(slices.Sorted(maps.Keys(e.Headers)), ", ") + ")"
		}
		return render.Line(line)
	}
	return render.Line(strings.Join(append([]string{e.Command}, e.Args...), " "))
}

// list shows the MCP servers of the person's layer and of the project.
func (m mcpRun) list() int {
	found, problems := manifest.Discover(manifest.Layers(m.home, m.cwd, nil))
	for _, p := range problems {
		fmt.Fprintf(m.stderr, "bingo: %v\n", p)
	}
	tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	n := 0
	for _, p := range found {
		for _, p := range append([]*manifest.Manifest{p}, p.Shadows...) {
			if p.Entry.Protocol != manifest.ProtocolMCP {
				continue
			}
			if n == 0 {
				fmt.Fprintln(tw, "NAME\tLAYER\tTRANSPORT\tFROM\tRUNS")
			}
			n++
			from := p.File
			if p.Server != "" {
				from = fmt.Sprintf("%s %q", p.File, p.Server)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Layer, p.Entry.Transport(), render.Line(from), describe(p.Entry))
		}
	}
	if n == 0 {
		fmt.Fprintln(tw, "no MCP servers: add one with bingo mcp add NAME -- COMMAND [ARGS...]")
	}
	return ExitOK
}

// remove takes a server out: a plugin of the person's that bingo mcp add
// or import wrote (a directory holding only an mcp plugin.json), or with
// --project a server of the project's .mcp.json.
func (m mcpRun) remove(name string) int {
	if m.o.mcpProject {
		root := manifest.Project(m.home, m.cwd)
		if root == "" {
			return m.fail("remove --project: not in a project")
		}
		file := filepath.Join(root, manifest.MCPFileName)
		servers, err := m.projectServers(file)
		if err != nil {
			return m.fail("remove --project: %s: %v", file, err)
		}
		for _, s := range servers {
			if s.Key == name || s.Name == name {
				if _, err := manifest.SetMCPServer(file, s.Key, nil); err != nil {
					return m.fail("remove --project: %v", err)
				}
				fmt.Fprintf(m.stdout, "removed server %q from %s\n", render.Line(s.Key), file)
				return ExitOK
			}
		}
		return m.fail("remove --project: %s has no server %q", file, render.Line(name))
	}
	dir := filepath.Join(m.home, ".bingo", "plugins", name)
	if manifest.ValidName(name) != nil {
		return m.fail("remove: %q is no plugin name", render.Line(name))
	}
	p, err := manifest.Load(dir, manifest.LayerUser)
	if errors.Is(err, fs.ErrNotExist) {
		return m.fail("remove: you have no plugin %s (%s)", name, dir)
	}
	if err != nil {
		return m.fail("remove: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return m.fail("remove: %v", err)
	}
	if p.Entry.Protocol != manifest.ProtocolMCP || len(entries) != 1 {
		return m.fail("remove: %s is not an MCP server bingo mcp add wrote (a directory holding only its plugin.json); remove it yourself", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return m.fail("remove: %v", err)
	}
	fmt.Fprintf(m.stdout, "removed %s (%s)\n", name, dir)
	return ExitOK
}

// login authorizes bingo with the remote server name, one of the person's
// plugins, by the authorization code flow in the browser (package
// internal/oauth), and stores what it gets under ~/.bingo/oauth. A
// project's server is authorized where it runs, once the project is
// trusted: login reads the person's environment into an entry, which a
// project's must not do before trust.
func (m mcpRun) login(name string) int {
	p, code := m.remote("login", name)
	if p == nil {
		return code
	}
	// Read from what a run gives the server, not bingo's whole
	// environment: a withheld variable or the provider's key would
	// otherwise go out in a header or as its client's secret.
	r, _, err := host.Resolve(m.home, p, os.Environ())
	if err != nil {
		return m.fail("login %s: %v", name, err)
	}
	if oauth.Manages(r.Entry) {
		return m.fail("login %s: its entry sends its own Authorization header, so bingo does no OAuth for it; remove the header to log in", name)
	}
	o := oauth.ForEntry(name, r.Entry, m.home)
	if o.Grant == manifest.GrantClientCredentials {
		fmt.Fprintf(m.stdout, "%s authorizes itself with its client's credentials (its entry's \"grant\"): there is nothing to log in\n", name)
		return ExitOK
	}
	o.Shown, o.Login, o.Stderr = p.Entry.URL, true, m.stderr
	oh, err := oauth.New(o)
	if err != nil {
		return m.fail("login %s: %v", name, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	conn, err := mcphttp.New(mcphttp.Config{URL: r.Entry.URL, Shown: p.Entry.URL, Headers: r.Entry.Headers, OAuth: oh}).Start(ctx)
	if err != nil {
		return m.fail("login %s: %v", name, err)
	}
	defer conn.Close()
	session, ok := conn.(mcphttp.Session)
	if !ok {
		return m.fail("login %s: not a remote session", name)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bingo", Version: strconv.Itoa(protocol.Version)}, nil).Connect(ctx, session.Client(nil), nil)
	if err != nil {
		return m.fail("login %s: %v", name, err)
	}
	_ = cs.Close()
	issuer := oh.Authorized()
	if issuer == "" {
		fmt.Fprintf(m.stdout, "%s did not ask for authorization: nothing stored\n", name)
		return ExitOK
	}
	fmt.Fprintf(m.stdout, "authorized %s at %s; its tokens are in %s\n", name, render.URL(issuer), oh.File())
	return ExitOK
}

// logout forgets what login, or a later authorization, stored for name.
func (m mcpRun) logout(name string) int {
	if manifest.ValidName(name) != nil {
		return m.fail("logout: %q is no plugin name", render.Line(name))
	}
	store := oauth.Store{Dir: oauth.DefaultDir(m.home)}
	had, err := store.Forget(name)
	if err != nil {
		return m.fail("logout %s: %v", name, err)
	}
	if !had {
		fmt.Fprintf(m.stdout, "no tokens were stored for %s\n", name)
		return ExitOK
	}
	fmt.Fprintf(m.stdout, "forgot the tokens of %s\n", name)
	return ExitOK
}

// remote is the person's remote MCP server name, for form; nil and the
// exit status, said, if it is none.
func (m mcpRun) remote(form, name string) (*manifest.Manifest, int) {
	if manifest.ValidName(name) != nil {
		return nil, m.fail("%s: %q is no plugin name", form, render.Line(name))
	}
	dir := filepath.Join(m.home, ".bingo", "plugins", name)
	p, err := manifest.Load(dir, manifest.LayerUser)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, m.fail("%s: you have no plugin %s (%s); a project's remote server asks for authorization where it runs, once you trust the project", form, name, dir)
	}
	if err != nil {
		return nil, m.fail("%s: %v", form, err)
	}
	if p.Entry.Transport() != manifest.TransportHTTP {
		return nil, m.fail("%s: %s is no remote MCP server (it runs %s)", form, name, describe(p.Entry))
	}
	return p, ExitOK
}

// maxImport caps the file bingo mcp import reads: Claude Code keeps its
// servers in ~/.claude.json beside its history of every project, which
// grows to megabytes.
const maxImport = 64 << 20

// importErr is why the file to import cannot be read, in words.
func importErr(err error) error {
	var pe *fs.PathError
	var nr capped.NotRegularError
	switch {
	case errors.Is(err, capped.ErrTooLarge):
		return fmt.Errorf("larger than the %d MiB an MCP configuration may be", maxImport>>20)
	case errors.As(err, &nr):
		what := "not a regular file"
		switch t := nr.Mode.Type(); {
		case t&fs.ModeDir != 0:
			what = "a directory"
		case t&fs.ModeNamedPipe != 0:
			what = "a FIFO"
		case t&fs.ModeDevice != 0:
			what = "a device"
		case t&fs.ModeSocket != 0:
			what = "a socket"
		}
		return fmt.Errorf("%s, not a file: only a regular file is read", what)
	case errors.As(err, &pe):
		return pe.Err
	}
	return err
}

// importFile adds the servers of another tool's MCP configuration to the
// person's plugins, saying what became of each.
func (m mcpRun) importFile(name string) int {
	file := name
	if !filepath.IsAbs(file) {
		file = filepath.Join(m.cwd, file)
	}
	// Capped, and only a regular file: a path that never ends (/dev/zero,
	// a FIFO) is refused before it is read, not read until memory ends.
	data, err := capped.Read(file, maxImport)
	if err != nil {
		return m.fail("import: %s: %v", file, importErr(err))
	}
	servers, err := manifest.ParseMCPConfig(data, filepath.Dir(file))
	if err != nil {
		return m.fail("import: %s: %v", file, err)
	}
	status := ExitOK
	for _, s := range servers {
		if s.Err == nil {
			var path string
			if path, err = m.writeUser(s); err == nil {
				fmt.Fprintf(m.stdout, "added %s (%s): %s\n", m.named(s), path, describe(s.Entry))
				continue
			}
			s.Err = fmt.Errorf("server %q: %w", s.Key, err)
		}
		fmt.Fprintf(m.stderr, "bingo: mcp import: skipped %v\n", s.Err)
		status = ExitError
	}
	if len(servers) == 0 {
		fmt.Fprintf(m.stdout, "%s has no servers\n", file)
	}
	return status
}
