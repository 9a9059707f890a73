package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// record makes a trust record for root with one plugin.
func sampleProject(root, plugin, script string) Project {
	files := map[string]string{".bingo/plugins/" + plugin + "/main.py": fileRec(script)}
	return Project{
		Root:     root,
		At:       time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Plugins:  map[string]Plugin{plugin: {Name: plugin, Digest: digestOf(plugin, files), Files: files}},
		Settings: "missing",
	}
}

func put(t *testing.T, s *Store, p Project) {
	t.Helper()
	aside, err := s.Update(func(projects map[string]Project) error {
		projects[p.Root] = p
		return nil
	})
	if err != nil || aside != "" {
		t.Fatalf("Update = %q, %v", aside, err)
	}
}

func get(t *testing.T, s *Store, root string) (Project, bool) {
	t.Helper()
	p, ok, err := s.Get(root)
	if err != nil {
		t.Fatalf("Get(%s): %v", root, err)
	}
	return p, ok
}

func TestUpdateThenGet(t *testing.T) {
	home := t.TempDir()
	s := NewStore(home)
	if want := filepath.Join(home, ".bingo", "trust.json"); s.Path() != want {
		t.Errorf("Path = %s, want %s", s.Path(), want)
	}
	root := newProject(t)
	if p, ok := get(t, s, root); ok || !reflect.DeepEqual(p, Project{}) {
		t.Fatalf("Get with no file = %+v, %v", p, ok)
	}
	want := sampleProject(root, "deploy", "x")
	put(t, s, want)
	got, ok := get(t, s, root)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("Get = %+v, %v\nwant %+v", got, ok, want)
	}
	if _, ok := get(t, s, t.TempDir()); ok {
		t.Error("Get of an unrecorded project found a record")
	}

	// The file is the person's alone, and says which format it is.
	fi, err := os.Stat(s.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("trust.json mode = %v, %v; want 0600", fi.Mode(), err)
	}
	di, err := os.Stat(filepath.Dir(s.Path()))
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("~/.bingo mode = %v, %v; want 0700", di.Mode(), err)
	}
	data, _ := os.ReadFile(s.Path())
	if !bytes.Contains(data, []byte(`"version": 2`)) {
		t.Errorf("trust.json has no version 2:\n%s", data)
	}

	// An existing file with a looser mode is replaced by a 0600 one.
	if err := os.Chmod(s.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	put(t, s, sampleProject(root, "deploy", "y"))
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("after Update trust.json mode = %v; want 0600", fi.Mode())
	}

	// Removing a record.
	if _, err := s.Update(func(p map[string]Project) error { delete(p, root); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, s, root); ok {
		t.Error("the record survived its removal")
	}
}

func TestGetResolvesASymlinkedRoot(t *testing.T) {
	s := NewStore(t.TempDir())
	real := newProject(t)
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(real, alias); err != nil {
		t.Fatal(err)
	}
	key, err := RealRoot(alias)
	if err != nil || key != real {
		t.Fatalf("RealRoot(alias) = %s, %v; want %s", key, err, real)
	}
	put(t, s, sampleProject(key, "deploy", "x"))
	for _, r := range []string{real, alias, alias + "/", filepath.Join(alias, ".git", "..")} {
		p, ok := get(t, s, r)
		if !ok || p.Root != real {
			t.Errorf("Get(%s) = %+v, %v; want the record of %s", r, p, ok, real)
		}
	}
	if _, _, err := s.Get(filepath.Join(real, "no-such-dir")); err == nil {
		t.Error("Get of a project that does not exist succeeded")
	}
}

var errCrash = errors.New("simulated crash")

func TestUpdateIsAtomic(t *testing.T) {
	home := t.TempDir()
	s := NewStore(home)
	a, b, c := newProject(t), newProject(t), newProject(t)
	put(t, s, sampleProject(a, "deploy", "a"))
	old, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}

	// Die between writing the temp file and renaming it.
	var tmp string
	s.afterTemp = func(f string) error { tmp = f; return errCrash }
	if _, err := s.Update(func(p map[string]Project) error { p[b] = sampleProject(b, "deploy", "b"); return nil }); !errors.Is(err, errCrash) {
		t.Fatalf("Update = %v, want the crash", err)
	}
	if filepath.Dir(tmp) != filepath.Dir(s.Path()) || tmp == s.Path() {
		t.Fatalf("temp file %s is not a sibling of %s", tmp, s.Path())
	}
	leftover, err := os.ReadFile(tmp)
	if err != nil || !bytes.Contains(leftover, []byte(b)) {
		t.Fatalf("the crash left no complete temp file: %v", err)
	}
	if now, _ := os.ReadFile(s.Path()); !bytes.Equal(now, old) {
		t.Errorf("trust.json changed though the rename never happened:\n%s", now)
	}
	// Another process reads the old record, and not the temp file's.
	other := NewStore(home)
	if _, ok := get(t, other, a); !ok {
		t.Error("the old record is gone after a crash")
	}
	if _, ok := get(t, other, b); ok {
		t.Error("the temp file was taken for the record")
	}

	// The next Update succeeds and sweeps the crash's temp file away.
	put(t, other, sampleProject(c, "deploy", "c"))
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file survived the next Update: %v", err)
	}
	for root, want := range map[string]bool{a: true, b: false, c: true} {
		if _, ok := get(t, other, root); ok != want {
			t.Errorf("Get(%s) found = %v, want %v", root, ok, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(s.Path()))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"trust.json", "trust.json.lock"}; !reflect.DeepEqual(names, want) {
		t.Errorf("~/.bingo holds %q, want %q", names, want)
	}
}

func TestUpdateWritesNothingWhenFnFails(t *testing.T) {
	s := NewStore(t.TempDir())
	root := newProject(t)
	put(t, s, sampleProject(root, "deploy", "a"))
	before, _ := os.ReadFile(s.Path())
	boom := errors.New("boom")
	if _, err := s.Update(func(p map[string]Project) error { delete(p, root); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update = %v", err)
	}
	if after, _ := os.ReadFile(s.Path()); !bytes.Equal(after, before) {
		t.Error("a failed Update changed the file")
	}
}

func TestUpdateRefusesMalformedRecords(t *testing.T) {
	root := newProject(t)
	good := sampleProject(root, "deploy", "a")
	badDigest := sampleProject(root, "deploy", "a")
	pl := badDigest.Plugins["deploy"]
	pl.Files = map[string]string{"other": "missing"}
	badDigest.Plugins["deploy"] = pl
	misnamed := sampleProject(root, "deploy", "a")
	misnamed.Plugins["other"] = misnamed.Plugins["deploy"]
	for name, fn := range map[string]func(map[string]Project){
		"relative key":   func(p map[string]Project) { p["proj"] = Project{} },
		"unclean key":    func(p map[string]Project) { p[root+"/./x/.."] = Project{} },
		"root mismatch":  func(p map[string]Project) { p[root+"x"] = good },
		"digest":         func(p map[string]Project) { p[root] = badDigest },
		"plugin misname": func(p map[string]Project) { p[root] = misnamed },
	} {
		s := NewStore(t.TempDir())
		if _, err := s.Update(func(p map[string]Project) error { fn(p); return nil }); err == nil {
			t.Errorf("%s: Update accepted it", name)
		}
		if _, err := os.Lstat(s.Path()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: a refused Update wrote the file", name)
		}
	}
}

func TestCorruptFile(t *testing.T) {
	root := newProject(t)
	zero := "sha256:" + strings.Repeat("0", 64)
	for name, content := range map[string]string{
		"empty":             "",
		"not json":          "{not json",
		"truncated":         `{"version": 2, "projects": {"/p": {"at": "2025-01-01T00:00:00Z", "plu`,
		"array":             "[]",
		"null":              "null",
		"no version":        `{"projects": {}}`,
		"string version":    `{"version": "1", "projects": {}}`,
		"version zero":      `{"version": 0, "projects": {}}`,
		"fractional":        `{"version": 2.5, "projects": {}}`,
		"unknown field":     `{"version": 2, "projeks": {}}`,
		"trailing data":     `{"version": 2, "projects": {}} {}`,
		"relative project":  `{"version": 2, "projects": {"p": {"at": "2025-01-01T00:00:00Z", "plugins": {}, "settings": "missing"}}}`,
		"wrong type":        `{"version": 2, "projects": {"/p": {"declined": "yes"}}}`,
		"digest mismatch":   `{"version": 2, "projects": {"/p": {"plugins": {"x": {"digest": "` + zero + `", "files": {}}}}}}`,
		"malformed digest":  `{"version": 2, "projects": {"/p": {"plugins": {"x": {"digest": "md5:00", "files": {}}}}}}`,
		"not utf8 or json":  "\xff\xfe",
		"project of a list": `{"version": 2, "projects": []}`,
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			s := NewStore(home)
			writeFile(t, s.Path(), content)
			p, ok, err := s.Get(root)
			if !errors.Is(err, ErrCorrupt) || ok || !reflect.DeepEqual(p, Project{}) {
				t.Fatalf("Get = %+v, %v, %v; want ErrCorrupt", p, ok, err)
			}
			if !strings.Contains(err.Error(), s.Path()) {
				t.Errorf("the error does not name the file: %v", err)
			}
			want := sampleProject(root, "deploy", "x")
			aside, err := s.Update(func(projects map[string]Project) error {
				if len(projects) != 0 {
					t.Errorf("Update started from %v, not from nothing", projects)
				}
				projects[root] = want
				return nil
			})
			if err != nil || aside != s.Path()+".corrupt" {
				t.Fatalf("Update = %q, %v; want it moved to %s.corrupt", aside, err, s.Path())
			}
			if kept, err := os.ReadFile(aside); err != nil || string(kept) != content {
				t.Errorf("the corrupt file was not kept as it was: %q, %v", kept, err)
			}
			if got, ok := get(t, s, root); !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("after Update Get = %+v, %v", got, ok)
			}
		})
	}
}

func TestCorruptFileMovedAsideTwice(t *testing.T) {
	s := NewStore(t.TempDir())
	root := newProject(t)
	for i, want := range []string{".corrupt", ".corrupt.1", ".corrupt.2"} {
		writeFile(t, s.Path(), "garbage "+strconv.Itoa(i))
		aside, err := s.Update(func(p map[string]Project) error { p[root] = sampleProject(root, "d", "x"); return nil })
		if err != nil || aside != s.Path()+want {
			t.Fatalf("Update %d = %q, %v; want %s%s", i, aside, err, s.Path(), want)
		}
		if kept, _ := os.ReadFile(aside); string(kept) != "garbage "+strconv.Itoa(i) {
			t.Errorf("%s holds %q", aside, kept)
		}
	}
}

func TestNewerVersionIsNeverOverwritten(t *testing.T) {
	s := NewStore(t.TempDir())
	root := newProject(t)
	content := `{"version": 3, "projects": {"` + root + `": {"trust": "everything"}}, "new": true}`
	writeFile(t, s.Path(), content)

	_, ok, err := s.Get(root)
	var verr *VersionError
	if ok || !errors.Is(err, ErrCorrupt) || !errors.As(err, &verr) || verr.Version != 3 {
		t.Fatalf("Get = %v, %v; want a VersionError for version 3 that is ErrCorrupt", ok, err)
	}
	if !strings.Contains(err.Error(), "newer bingo") {
		t.Errorf("message does not say why: %v", err)
	}
	called := false
	aside, err := s.Update(func(map[string]Project) error { called = true; return nil })
	if err == nil || !errors.As(err, &verr) || aside != "" || called {
		t.Fatalf("Update = %q, %v (fn called: %v); want a refusal", aside, err, called)
	}
	if now, _ := os.ReadFile(s.Path()); string(now) != content {
		t.Error("Update changed a newer bingo's file")
	}
	if _, err := os.Lstat(s.Path() + ".corrupt"); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Update moved a newer bingo's file aside")
	}
}

// A record of version 1 pinned fewer files, by another digest rule: it
// trusts nothing, says so, and is kept aside when the record is next
// changed.
func TestOlderVersionTrustsNothing(t *testing.T) {
	s := NewStore(t.TempDir())
	root := newProject(t)
	m := install(t, root, "deploy", "1", pyEntry)
	p := snap(t, root, m)
	old, err := json.Marshal(map[string]any{"version": 1, "projects": map[string]any{root: map[string]any{
		"at": "2025-01-01T00:00:00Z", "settings": "missing",
		"plugins": map[string]any{"deploy": map[string]any{"digest": p.Digest, "files": p.Files}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, s.Path(), string(old))

	_, ok, err := s.Get(root)
	var oerr *OldVersionError
	if ok || !errors.Is(err, ErrCorrupt) || !errors.As(err, &oerr) || oerr.Version != 1 {
		t.Fatalf("Get = %v, %v; want an OldVersionError for version 1 that is ErrCorrupt", ok, err)
	}
	for _, want := range []string{s.Path(), "older bingo", `run "bingo trust"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	aside, err := s.Update(func(projects map[string]Project) error {
		if len(projects) != 0 {
			t.Errorf("Update started from %v, not from nothing", projects)
		}
		return nil
	})
	if err != nil || aside != s.Path()+".v1" {
		t.Fatalf("Update = %q, %v; want it moved to %s.v1", aside, err, s.Path())
	}
	if kept, _ := os.ReadFile(aside); !bytes.Equal(kept, old) {
		t.Errorf("%s holds %q", aside, kept)
	}
	if _, ok, err := s.Get(root); ok || err != nil {
		t.Errorf("after Update Get = %v, %v; want no record", ok, err)
	}
}

func TestNonRegularTrustFileIsAnError(t *testing.T) {
	s := NewStore(t.TempDir())
	if err := os.MkdirAll(s.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	root := newProject(t)
	if _, ok, err := s.Get(root); err == nil || ok {
		t.Errorf("Get with a directory for trust.json = %v, %v", ok, err)
	}
	if _, err := s.Update(func(map[string]Project) error { return nil }); err == nil {
		t.Error("Update with a directory for trust.json succeeded")
	}
}

func TestStoreNeedsAnAbsoluteHome(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, home := range []string{"", "relative"} {
		s := NewStore(home)
		if _, _, err := s.Get(dir); err == nil {
			t.Errorf("NewStore(%q).Get succeeded", home)
		}
		if _, err := s.Update(func(map[string]Project) error { return nil }); err == nil {
			t.Errorf("NewStore(%q).Update succeeded", home)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a Store without a home wrote into the working directory: %v", entries)
	}
}

// Each Update adds one project; with the lock none is lost. Every
// goroutine has its own Store, as separate processes would.
func TestConcurrentUpdatesAllSurvive(t *testing.T) {
	home := t.TempDir()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			root := fmt.Sprintf("/projects/p%d", i)
			_, err := NewStore(home).Update(func(p map[string]Project) error {
				time.Sleep(time.Millisecond) // widen the read-modify-write window
				p[root] = sampleProject(root, "deploy", root)
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	projects, err := NewStore(home).read()
	if err != nil {
		t.Fatal(err)
	}
	if len(projects) != n {
		t.Errorf("%d of %d projects survived", len(projects), n)
	}
}

const helperEnv = "BINGO_TRUST_TEST_HELPER"

// helperProcess runs in a child: "home|prefix|n" adds n projects.
func helperProcess() int {
	parts := strings.Split(os.Getenv(helperEnv), "|")
	n, _ := strconv.Atoi(parts[2])
	s := NewStore(parts[0])
	for i := range n {
		root := fmt.Sprintf("/projects/%s-%d", parts[1], i)
		if _, err := s.Update(func(p map[string]Project) error {
			p[root] = sampleProject(root, "deploy", root)
			return nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// The lock works between processes, not only goroutines.
func TestUpdateAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	home := t.TempDir()
	const procs, each = 4, 15
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|c%d|%d", helperEnv, home, i, each))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	projects, err := NewStore(home).read()
	if err != nil {
		t.Fatal(err)
	}
	if len(projects) != procs*each {
		t.Errorf("%d of %d projects survived", len(projects), procs*each)
	}
}
