package trust

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCheckReportsNewAndChanged(t *testing.T) {
	files := map[string]string{
		".bingo/plugins/a/plugin.json": "file 01",
		".bingo/plugins/a/main.py":     "file 02",
		".bingo/plugins/a/lib.py":      "file 03",
	}
	a := Plugin{Name: "a", Digest: digestOf("a", files), Files: files}
	rec := Project{Root: "/p", Plugins: map[string]Plugin{"a": a}}

	if ok, l := rec.Check(a); !ok || l.New || l.Changed != nil {
		t.Errorf("Check(unchanged) = %v, %+v", ok, l)
	}

	changed := map[string]string{
		".bingo/plugins/a/plugin.json": "file 01",
		".bingo/plugins/a/main.py":     "file 99", // contents changed
		".bingo/plugins/a/run":         "missing", // newly named
		// lib.py no longer named
	}
	ok, l := rec.Check(Plugin{Name: "a", Digest: digestOf("a", changed), Files: changed})
	want := Lapse{Plugin: "a", Changed: []string{".bingo/plugins/a/lib.py", ".bingo/plugins/a/main.py", ".bingo/plugins/a/run"}}
	if ok || !reflect.DeepEqual(l, want) {
		t.Errorf("Check(changed) = %v, %+v; want %+v", ok, l, want)
	}

	b := Plugin{Name: "b", Digest: digestOf("b", nil)}
	if ok, l := rec.Check(b); ok || !reflect.DeepEqual(l, Lapse{Plugin: "b", New: true}) {
		t.Errorf("Check(new plugin) = %v, %+v", ok, l)
	}
	if ok, l := (Project{}).Check(a); ok || !l.New {
		t.Errorf("no record: Check = %v, %+v", ok, l)
	}

	// Check compares; a declined record that matches, matches.
	rec.Declined = true
	if ok, _ := rec.Check(a); !ok {
		t.Error("Check of a declined record ignored the match")
	}
}

func TestSettingsTrusted(t *testing.T) {
	rec := Project{Root: "/p", Settings: "file 01"}
	for now, want := range map[string]bool{"file 01": true, "file 02": false, "missing": true, "other fifo": false, "": false} {
		if got := rec.SettingsTrusted(now); got != want {
			t.Errorf("SettingsTrusted(%q) = %v, want %v", now, got, want)
		}
	}
	if (Project{}).SettingsTrusted("file 01") {
		t.Error("no record trusts a settings file")
	}
	if !(Project{}).SettingsTrusted("missing") {
		t.Error("a missing settings file has nothing to distrust")
	}
}

// The whole path: trust a project, change its script, see which file.
func TestLapseNamesTheChangedFile(t *testing.T) {
	home := t.TempDir()
	root := newProject(t)
	script := filepath.Join(pluginDir(root, "deploy"), "main.py")
	writeFile(t, script, "deploy()\n")
	m := install(t, root, "deploy", "1", pyEntry)

	s := NewStore(home)
	real, err := RealRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	p := snap(t, root, m)
	put(t, s, Project{Root: real, Plugins: map[string]Plugin{p.Name: p}, Settings: "missing"})

	if err := os.WriteFile(script, []byte("deploy(); steal()\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, ok := get(t, s, root)
	if !ok {
		t.Fatal("no record")
	}
	trusted, l := rec.Check(snap(t, root, m))
	if trusted {
		t.Fatal("still trusted after the script changed")
	}
	msg := fmt.Sprintf("plugin %s: trust lapsed: %s changed since you trusted %s; run \"bingo trust\" to trust it again",
		l.Plugin, strings.Join(l.Changed, ", "), rec.Root)
	want := fmt.Sprintf("plugin deploy: trust lapsed: .bingo/plugins/deploy/main.py changed since you trusted %s; run \"bingo trust\" to trust it again", real)
	if msg != want {
		t.Errorf("message:\n got %s\nwant %s", msg, want)
	}
}
