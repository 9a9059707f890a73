package trust

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// newProject returns a fresh project root, symlinks resolved, holding a
// .git marker.
func newProject(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

// writeFile writes content to path, creating its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pluginDir is where the project plugin name lives.
func pluginDir(root, name string) string {
	return filepath.Join(root, ".bingo", "plugins", name)
}

// install writes the project plugin name with the given entry (JSON) and
// version, and loads it as discovery would.
func install(t *testing.T, root, name, version, entry string) *manifest.Manifest {
	t.Helper()
	dir := pluginDir(root, name)
	writeFile(t, filepath.Join(dir, manifest.FileName),
		fmt.Sprintf(`{"name": %q, "version": %q, "entry": %s}`, name, version, entry))
	return load(t, dir)
}

func load(t *testing.T, dir string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Load(dir, manifest.LayerProject)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func snap(t *testing.T, root string, m *manifest.Manifest) Plugin {
	t.Helper()
	p, err := Snapshot(Scope{Project: root}, m)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if p.Name != m.Name || !digestRE.MatchString(p.Digest) {
		t.Fatalf("Snapshot = %+v", p)
	}
	return p
}

func fileRec(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "file " + hex.EncodeToString(sum[:])
}

const pyEntry = `{"command": "python3", "args": ["${PLUGIN_ROOT}/main.py"]}`

// mustLapse checks that now is not what was recorded and that exactly
// changed differ.
func mustLapse(t *testing.T, before, now Plugin, changed ...string) {
	t.Helper()
	if before.Digest == now.Digest {
		t.Fatalf("digest did not change: %s", now.Digest)
	}
	ok, l := Project{Plugins: map[string]Plugin{before.Name: before}}.Check(now)
	if ok || l.New || !reflect.DeepEqual(l.Changed, changed) {
		t.Fatalf("Check = %v, %+v; want a lapse of %q", ok, l, changed)
	}
}

func TestSnapshotRecordsWhatTheEntryNames(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	outside := t.TempDir()
	writeFile(t, filepath.Join(dir, "run"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(dir, "main.py"), "print('hi')\n")
	writeFile(t, filepath.Join(dir, "conf.ini"), "[x]\n")
	writeFile(t, filepath.Join(dir, "lib.py"), "X = 1\n")
	writeFile(t, filepath.Join(dir, "helper.py"), "named by nothing\n")
	writeFile(t, filepath.Join(dir, "data", "x.txt"), "deep\n")
	writeFile(t, filepath.Join(root, "shared", "util.py"), "Y = 2\n")
	writeFile(t, filepath.Join(root, "src", "tool.py"), "in the session's directory\n")
	writeFile(t, filepath.Join(outside, "x.py"), "outside\n")
	m := install(t, root, "deploy", "1", fmt.Sprintf(`{
		"command": "./run",
		"args": ["${PLUGIN_ROOT}/main.py", "--config=${PLUGIN_ROOT}/conf.ini", "plain", "-v", "src/tool.py",
		         %q, "../../../shared/util.py", "${PLUGIN_ROOT}/absent.py", "${PLUGIN_ROOT}/data"],
		"env": {"LIB": "${PLUGIN_ROOT}/lib.py", "MODE": "fast", "OUT": %q}
	}`, filepath.Join(outside, "x.py"), outside))
	// The process starts in the project's root: "src/tool.py" is its file.
	p, err := Snapshot(Scope{Project: root, Dir: root}, m)
	if err != nil {
		t.Fatal(err)
	}

	manifestBytes, err := os.ReadFile(m.File)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		// The whole plugin directory, named or not.
		".bingo/plugins/deploy/plugin.json": fileRec(string(manifestBytes)),
		".bingo/plugins/deploy/run":         fileRec("#!/bin/sh\n"),
		".bingo/plugins/deploy/main.py":     fileRec("print('hi')\n"),
		".bingo/plugins/deploy/conf.ini":    fileRec("[x]\n"),
		".bingo/plugins/deploy/lib.py":      fileRec("X = 1\n"),
		".bingo/plugins/deploy/helper.py":   fileRec("named by nothing\n"),
		".bingo/plugins/deploy/data/x.txt":  fileRec("deep\n"),
		// A named directory by its type.
		".bingo/plugins/deploy/data": "other directory",
		// Named files of the repository, wherever they are in it.
		"shared/util.py": fileRec("Y = 2\n"),
		"src/tool.py":    fileRec("in the session's directory\n"),
	}
	if !reflect.DeepEqual(p.Files, want) {
		t.Errorf("Files:\n got %q\nwant %q", p.Files, want)
	}
	if p.Digest != digestOf("deploy", want) {
		t.Errorf("Digest %s is not the digest of Files", p.Digest)
	}
	if !slices.Contains(p.Outside, filepath.Join(outside, "x.py")) || !slices.Contains(p.Outside, outside) {
		t.Errorf("Outside = %q; want %s and its file named", p.Outside, outside)
	}
	if again, _ := Snapshot(Scope{Project: root, Dir: root}, m); !reflect.DeepEqual(again, p) {
		t.Errorf("a second Snapshot of the same files differs:\n%+v\n%+v", again, p)
	}
}

func TestSnapshotWasmAndRelativeProjectRoot(t *testing.T) {
	root := newProject(t)
	writeFile(t, filepath.Join(pluginDir(root, "w"), "w.wasm"), "\x00asm")
	m := install(t, root, "w", "1", `{"wasm": "w.wasm"}`)
	t.Chdir(filepath.Join(root, ".bingo"))
	p := snap(t, "..", m)
	if got := p.Files[".bingo/plugins/w/w.wasm"]; got != fileRec("\x00asm") {
		t.Errorf("wasm record = %q", got)
	}
}

func TestDigestChangesWhenTheScriptChangesByOneByte(t *testing.T) {
	root := newProject(t)
	script := filepath.Join(pluginDir(root, "deploy"), "main.py")
	writeFile(t, script, "print('hello')\n")
	m := install(t, root, "deploy", "1", pyEntry)
	before := snap(t, root, m)
	if same := snap(t, root, m); same.Digest != before.Digest {
		t.Fatal("the digest is not stable")
	}
	writeFile(t, script, "print('hellp')\n") // same size, one byte
	mustLapse(t, before, snap(t, root, m), ".bingo/plugins/deploy/main.py")
}

func TestDigestChangesWhenTheManifestChanges(t *testing.T) {
	root := newProject(t)
	writeFile(t, filepath.Join(pluginDir(root, "deploy"), "main.py"), "print('hello')\n")
	before := snap(t, root, install(t, root, "deploy", "1", pyEntry))
	now := snap(t, root, install(t, root, "deploy", "2", pyEntry))
	mustLapse(t, before, now, ".bingo/plugins/deploy/plugin.json")
}

func TestDigestFollowsSymlinks(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	writeFile(t, filepath.Join(dir, "a.py"), "same\n")
	writeFile(t, filepath.Join(dir, "b.py"), "same\n")
	link := filepath.Join(dir, "main.py")
	relink := func(target string) {
		t.Helper()
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	relink("a.py")
	m := install(t, root, "deploy", "1", pyEntry)
	first := snap(t, root, m)
	if got := first.Files[".bingo/plugins/deploy/main.py"]; got != "symlink a.py" {
		t.Errorf("link record = %q", got)
	}
	if got := first.Files[".bingo/plugins/deploy/a.py"]; got != fileRec("same\n") {
		t.Errorf("the link's target is recorded as %q", got)
	}

	// Retargeted to another file with the same contents (both pinned as
	// files of the plugin's directory).
	relink("b.py")
	mustLapse(t, first, snap(t, root, m), ".bingo/plugins/deploy/main.py")

	// Retargeted to the same file, spelled differently.
	relink("./a.py")
	mustLapse(t, first, snap(t, root, m), ".bingo/plugins/deploy/main.py")

	// The target's contents change behind an unchanged link.
	relink("a.py")
	writeFile(t, filepath.Join(dir, "a.py"), "changed\n")
	mustLapse(t, first, snap(t, root, m), ".bingo/plugins/deploy/a.py")

	// A dangling link is the link alone.
	relink("gone.py")
	p := snap(t, root, m)
	if _, ok := p.Files[".bingo/plugins/deploy/gone.py"]; ok || p.Files[".bingo/plugins/deploy/main.py"] != "symlink gone.py" {
		t.Errorf("dangling link: %q", p.Files)
	}
}

func TestDigestIgnoresFilesOutsideTheProject(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	outside := t.TempDir()
	named := filepath.Join(outside, "named.py")
	linked := filepath.Join(outside, "linked.py")
	writeFile(t, named, "one\n")
	writeFile(t, linked, "one\n")
	writeFile(t, filepath.Join(filepath.Dir(root), filepath.Base(root)+"-sibling", "x.py"), "one\n")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(linked, filepath.Join(dir, "main.py")); err != nil {
		t.Fatal(err)
	}
	// A path that climbs out of the project, and one into a sibling whose
	// name merely starts with the project's.
	m := install(t, root, "deploy", "1", fmt.Sprintf(`{"command": "/usr/bin/python3",
		"args": ["${PLUGIN_ROOT}/main.py", %q, "${PLUGIN_ROOT}/../../../../outside.py", %q]}`,
		named, "${PLUGIN_ROOT}/../../../../"+filepath.Base(root)+"-sibling/x.py"))
	before := snap(t, root, m)
	want := map[string]string{
		".bingo/plugins/deploy/plugin.json": before.Files[".bingo/plugins/deploy/plugin.json"],
		".bingo/plugins/deploy/main.py":     "symlink " + linked,
	}
	if !reflect.DeepEqual(before.Files, want) {
		t.Errorf("Files = %q, want %q", before.Files, want)
	}
	writeFile(t, named, "two\n")
	writeFile(t, linked, "two\n")
	writeFile(t, filepath.Join(filepath.Dir(root), filepath.Base(root)+"-sibling", "x.py"), "two\n")
	if now := snap(t, root, m); now.Digest != before.Digest {
		t.Errorf("changing files outside the project changed the digest: %q -> %q", before.Files, now.Files)
	}
}

// The manifest may be discovered through a symlinked spelling of the
// project while the caller passes the real one, or the other way round.
func TestSnapshotThroughASymlinkedRoot(t *testing.T) {
	root := newProject(t)
	writeFile(t, filepath.Join(pluginDir(root, "deploy"), "main.py"), "x\n")
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	install(t, root, "deploy", "1", pyEntry)
	viaAlias := load(t, pluginDir(alias, "deploy"))
	want := snap(t, root, load(t, pluginDir(root, "deploy")))
	for _, r := range []string{root, alias} {
		if got := snap(t, r, viaAlias); !reflect.DeepEqual(got, want) {
			t.Errorf("Snapshot(%s, manifest via alias) = %q, want %q", r, got.Files, want.Files)
		}
	}
	if got := snap(t, alias, load(t, pluginDir(root, "deploy"))); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot(alias, manifest via root) = %q, want %q", got.Files, want.Files)
	}
}

func TestFileOverTheCapIsAnError(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	big := filepath.Join(dir, "big.bin")
	writeFile(t, big, "")
	if err := os.Truncate(big, MaxFileSize+1); err != nil { // sparse: no blocks written
		t.Fatal(err)
	}
	m := install(t, root, "deploy", "1", `{"command": "./big.bin"}`)
	_, err := Snapshot(Scope{Project: root}, m)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "deploy") {
		t.Errorf("Snapshot = %v; want ErrTooLarge naming %s and the plugin", err, big)
	}
	if _, err := SettingsRecord(big); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) {
		t.Errorf("SettingsRecord = %v; want ErrTooLarge naming %s", err, big)
	}
}

func TestSettingsRecord(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	for _, tc := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"missing", func() {}, "missing"},
		{"file", func() { writeFile(t, file, "{}") }, fileRec("{}")},
		{"symlink", func() {
			writeFile(t, filepath.Join(dir, "real.json"), "{}\n")
			os.Remove(file)
			if err := os.Symlink("real.json", file); err != nil {
				t.Fatal(err)
			}
		}, "symlink real.json -> " + fileRec("{}\n")},
		{"dangling symlink", func() {
			os.Remove(filepath.Join(dir, "real.json"))
		}, "symlink real.json -> missing"},
		{"directory", func() {
			os.Remove(file)
			if err := os.Mkdir(file, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "other directory"},
	} {
		tc.setup()
		got, err := SettingsRecord(file)
		if err != nil || got != tc.want {
			t.Errorf("%s: SettingsRecord = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// The digest's encoding, spelled out independently of digestOf.
func TestDigestEncoding(t *testing.T) {
	var b []byte
	str := func(s string) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	str("bingo-trust-v2")
	str("deploy")
	b = binary.BigEndian.AppendUint64(b, 2)
	str("a/main.py")
	str("missing")
	str("b")
	str("other fifo")
	sum := sha256.Sum256(b)
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := digestOf("deploy", map[string]string{"b": "other fifo", "a/main.py": "missing"}); got != want {
		t.Errorf("digestOf = %s, want %s", got, want)
	}
	// Length prefixes keep fields from running into each other.
	if digestOf("ab", map[string]string{"c": "missing"}) == digestOf("a", map[string]string{"bc": "missing"}) {
		t.Error("digest is ambiguous")
	}
}

func TestSnapshotWithoutAManifestFile(t *testing.T) {
	if _, err := Snapshot(Scope{Project: t.TempDir()}, nil); err == nil {
		t.Error("Snapshot(nil) succeeded")
	}
	if _, err := Snapshot(Scope{Project: t.TempDir()}, &manifest.Manifest{Name: "x", Entry: manifest.Entry{Command: "x"}}); err == nil {
		t.Error("Snapshot of a manifest with no file succeeded")
	}
}

// A symlink in the plugin's directory is pinned by its target, and what it
// leads to with it: a directory of the repository is walked (once, however
// many links lead there, and a link back up ends), one outside is listed.
func TestSymlinkedDirectories(t *testing.T) {
	root := newProject(t)
	dir := pluginDir(root, "deploy")
	outside := t.TempDir()
	writeFile(t, filepath.Join(root, "shared", "lib", "util.py"), "Y = 2\n")
	writeFile(t, filepath.Join(outside, "site.py"), "outside\n")
	m := install(t, root, "deploy", "1", pyEntry)
	for link, target := range map[string]string{
		"lib":   "../../../shared/lib",
		"again": "../../../shared/lib",
		"up":    "..",
		"site":  outside,
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := snap(t, root, m)
	for rel, want := range map[string]string{
		".bingo/plugins/deploy/lib":   "symlink ../../../shared/lib",
		".bingo/plugins/deploy/again": "symlink ../../../shared/lib",
		".bingo/plugins/deploy/up":    "symlink ..",
		".bingo/plugins/deploy/site":  "symlink " + outside,
		"shared/lib/util.py":          fileRec("Y = 2\n"),
	} {
		if got := p.Files[rel]; got != want {
			t.Errorf("%s: %q, want %q", rel, got, want)
		}
	}
	if !slices.Contains(p.Outside, outside) {
		t.Errorf("Outside = %q, want %q in it", p.Outside, outside)
	}
	writeFile(t, filepath.Join(root, "shared", "lib", "util.py"), "Y = 3\n")
	mustLapse(t, p, snap(t, root, m), "shared/lib/util.py")
}

// Past the byte cap the plugin cannot be pinned, and the error says so
// (the file cap, which takes 10 001 files to pass, is tested through the
// binary: testdata/trust/pin_caps.txtar).
func TestPluginByteCap(t *testing.T) {
	root := newProject(t)
	m := install(t, root, "deploy", "1", pyEntry)
	big := filepath.Join(pluginDir(root, "deploy"), "big.bin")
	writeFile(t, big, "")
	if err := os.Truncate(big, MaxPluginBytes); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	_, err := Snapshot(Scope{Project: root}, m)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "256 MiB") || !strings.Contains(err.Error(), "deploy") {
		t.Errorf("Snapshot = %v; want ErrTooLarge naming the byte cap and the plugin", err)
	}
}

// The repository is the outermost work tree around a project: a .git file
// below it (a submodule's, a worktree's) does not make a smaller one, so
// the enclosing repository's files stay pinned.
func TestRepositoryRootIsOutermost(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	sub := filepath.Join(repo, "sub")
	deep := filepath.Join(sub, "deep")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, project := range []string{repo, sub, deep} {
		if got := RepositoryRoot(project); got != repo {
			t.Errorf("RepositoryRoot(%s) = %s, want %s", project, got, repo)
		}
	}
	if got := RepositoryRoot(top); got != top {
		t.Errorf("outside any repository: RepositoryRoot(%s) = %s, want the project itself", top, got)
	}
}

// With Resolve, an MCP server's entry is expanded from Env before what it
// names is looked for: a file named only through ${VAR:-default} is
// pinned as it resolves, and a change of resolution changes the digest.
// An entry that cannot be expanded cannot start, and names nothing.
func TestSnapshotResolvesVariables(t *testing.T) {
	root := newProject(t)
	writeFile(t, filepath.Join(root, "tools", "server.py"), "print('a')\n")
	writeFile(t, filepath.Join(root, "tools", "other.py"), "print('b')\n")
	writeFile(t, filepath.Join(root, ".mcp.json"), `{"mcpServers": {"fmt": {"command": "sh",
		"args": ["${BINGO_NOPE:-tools/server.py}"], "env": {"CONF": "${CONF}"}}}}`)
	found, problems := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(root)})
	if len(found) != 1 || len(problems) != 0 {
		t.Fatalf("found %v, problems %v", found, problems)
	}
	m := found[0]
	sc := Scope{Project: root, Dir: root, Env: []string{"PATH=/usr/bin:/bin", "CONF=tools/other.py"}, Resolve: true}
	shot := func(sc Scope) Plugin {
		t.Helper()
		p, err := Snapshot(sc, m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := shot(sc)
	if !strings.HasPrefix(p.Files["tools/server.py"], "file ") || !strings.HasPrefix(p.Files["tools/other.py"], "file ") {
		t.Fatalf("files named through variables not pinned: %v", p.Files)
	}
	unresolved := sc
	unresolved.Resolve = false
	if q := shot(unresolved); q.Files["tools/server.py"] != "" {
		t.Errorf("without Resolve the entry is taken as already resolved: %v", q.Files)
	}
	moved := sc
	moved.Env = append(slices.Clone(sc.Env), "BINGO_NOPE=tools/other.py")
	if q := shot(moved); q.Digest == p.Digest || q.Files["tools/server.py"] != "" {
		t.Errorf("the variable resolving elsewhere left the digest as it was: %v", q.Files)
	}
	writeFile(t, filepath.Join(root, "tools", "server.py"), "print('changed')\n")
	if q := shot(sc); q.Digest == p.Digest {
		t.Error("the file the default names changed, the digest did not")
	}
	unset := sc
	unset.Env = []string{"PATH=/usr/bin:/bin"}
	if q := shot(unset); len(q.Files) != 1 {
		t.Errorf("an entry that cannot be expanded pins its entry alone: %v", q.Files)
	}
}
