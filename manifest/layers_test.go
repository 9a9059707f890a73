package manifest_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

func mkdir(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func touch(t *testing.T, path string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte("gitdir: elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// isolated returns a fresh directory with no .git or .bingo above it, or
// skips the test when the machine's temporary directory sits in one.
func isolated(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	if r := manifest.ProjectRoot(filepath.Dir(tmp)); r != "" {
		t.Skipf("the temporary directory is inside a project (%s)", r)
	}
	return tmp
}

func TestProjectRoot(t *testing.T) {
	tmp := isolated(t)

	gitProj := mkdir(t, filepath.Join(tmp, "git"))
	mkdir(t, filepath.Join(gitProj, ".git"))
	deep := mkdir(t, filepath.Join(gitProj, "a", "b", "c"))

	bingoProj := mkdir(t, filepath.Join(tmp, "bingo"))
	mkdir(t, filepath.Join(bingoProj, ".bingo"))

	worktree := mkdir(t, filepath.Join(tmp, "worktree"))
	touch(t, filepath.Join(worktree, ".git")) // a .git file, as in a git worktree

	nested := mkdir(t, filepath.Join(gitProj, "a", "sub"))
	mkdir(t, filepath.Join(nested, ".bingo"))

	none := mkdir(t, filepath.Join(tmp, "none", "x"))

	tests := []struct{ cwd, want string }{
		{gitProj, gitProj},                   // inclusive
		{deep, gitProj},                      // ancestor
		{bingoProj, bingoProj},               // .bingo counts
		{worktree, worktree},                 // a .git file counts
		{filepath.Join(nested, "x"), nested}, // the nearest wins (x need not exist)
		{nested, nested},
		{none, ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := manifest.ProjectRoot(tt.cwd); got != tt.want {
			t.Errorf("ProjectRoot(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}

	t.Run("relative cwd", func(t *testing.T) {
		t.Chdir(gitProj)
		if got := manifest.ProjectRoot("a/b"); got != gitProj {
			t.Errorf("ProjectRoot(a/b) = %q, want %q", got, gitProj)
		}
	})
}

// The home directory is never a project, whichever marker it holds; a
// folder of its own below it is.
func TestProject(t *testing.T) {
	tmp := isolated(t)
	home := mkdir(t, filepath.Join(tmp, "home"))
	mkdir(t, filepath.Join(home, ".bingo"))
	notes := mkdir(t, filepath.Join(home, "notes"))
	repo := mkdir(t, filepath.Join(home, "src", "repo"))
	mkdir(t, filepath.Join(repo, ".git"))
	for _, tt := range []struct{ home, cwd, want string }{
		{home, notes, ""},
		{home, home, ""},
		{home, filepath.Join(repo, "sub"), repo},
		{"", notes, home}, // no home known: the nearest marker
	} {
		if got := manifest.Project(tt.home, tt.cwd); got != tt.want {
			t.Errorf("Project(%q, %q) = %q, want %q", tt.home, tt.cwd, got, tt.want)
		}
	}
	mkdir(t, filepath.Join(home, ".git")) // a home kept in git is still home
	if got := manifest.Project(home, notes); got != "" {
		t.Errorf("Project(home, notes) with ~/.git = %q, want none", got)
	}
}

func TestLayers(t *testing.T) {
	tmp := isolated(t)
	home := mkdir(t, filepath.Join(tmp, "home"))
	proj := mkdir(t, filepath.Join(home, "src", "proj"))
	mkdir(t, filepath.Join(proj, ".git"))
	cwd := mkdir(t, filepath.Join(proj, "pkg"))
	outside := mkdir(t, filepath.Join(tmp, "outside"))

	user := manifest.Layer{Name: "user", Dir: filepath.Join(home, ".bingo", "plugins")}
	project := manifest.Layer{Name: "project", Dir: filepath.Join(proj, ".bingo", "plugins"), Most: manifest.MaxProjectPlugins, MCPFile: filepath.Join(proj, ".mcp.json")}

	t.Run("user, project, then extra dirs in order", func(t *testing.T) {
		got := manifest.Layers(home, cwd, []string{"/opt/a", "rel/b", "", "/opt/c/"})
		want := []manifest.Layer{
			user, project,
			{Name: "dir", Dir: "/opt/a"},
			{Name: "dir", Dir: filepath.Join(cwd, "rel", "b")}, // relative to the session's cwd
			{Name: "dir", Dir: "/opt/c"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v\nwant     %+v", got, want)
		}
	})
	t.Run("no project", func(t *testing.T) {
		got := manifest.Layers(home, outside, nil)
		if want := []manifest.Layer{user}; !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v, want %+v", got, want)
		}
	})
	t.Run("the project root is home: no second user layer", func(t *testing.T) {
		mkdir(t, filepath.Join(home, ".bingo"))
		defer os.RemoveAll(filepath.Join(home, ".bingo"))
		sub := mkdir(t, filepath.Join(home, "notes"))
		got := manifest.Layers(home, sub, nil)
		if want := []manifest.Layer{user}; !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v, want %+v", got, want)
		}
		// Spelled differently (a symlink to home) it is still home.
		link := filepath.Join(tmp, "homelink")
		if err := os.Symlink(home, link); err != nil {
			t.Fatal(err)
		}
		got = manifest.Layers(link, sub, nil)
		if want := []manifest.Layer{{Name: "user", Dir: filepath.Join(link, ".bingo", "plugins")}}; !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v, want %+v", got, want)
		}
	})
	t.Run("a --plugin-dir that is one plugin's directory", func(t *testing.T) {
		plugin(t, outside, "wc", "1")
		got := manifest.Layers(home, outside, []string{"wc", outside})
		want := []manifest.Layer{user,
			{Name: "dir", Dir: filepath.Join(outside, "wc"), Single: true},
			{Name: "dir", Dir: outside},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v\nwant     %+v", got, want)
		}
	})
	t.Run("no home: no user layer", func(t *testing.T) {
		got := manifest.Layers("", cwd, nil)
		if want := []manifest.Layer{project}; !reflect.DeepEqual(got, want) {
			t.Errorf("Layers = %+v, want %+v", got, want)
		}
	})
}

// plugin writes a valid manifest for name into layer dir, marking it with
// version so a test can tell which layer won.
func plugin(t *testing.T, layerDir, name, version string) {
	t.Helper()
	writePlugin(t, layerDir, name, `{"name": "`+name+`", "version": "`+version+`", "entry": {"command": "x"}}`)
}

type got struct{ name, version, layer string }

func summary(found []*manifest.Manifest) []got {
	var out []got
	for _, m := range found {
		out = append(out, got{m.Name, m.Version, m.Layer})
	}
	return out
}

func problemFiles(problems []manifest.Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.File)
	}
	return out
}

func TestDiscoverPrecedence(t *testing.T) {
	tmp := t.TempDir()
	user := filepath.Join(tmp, "user")
	project := filepath.Join(tmp, "project")
	dir1 := filepath.Join(tmp, "dir1")
	dir2 := filepath.Join(tmp, "dir2")

	plugin(t, user, "only-user", "u")
	plugin(t, user, "shared", "u")
	plugin(t, user, "everywhere", "u")
	plugin(t, project, "shared", "p")
	plugin(t, project, "everywhere", "p")
	plugin(t, project, "only-project", "p")
	plugin(t, dir1, "everywhere", "d1")
	plugin(t, dir1, "dirs", "d1")
	plugin(t, dir2, "dirs", "d2")

	found, problems := manifest.Discover([]manifest.Layer{
		{Name: "user", Dir: user}, {Name: "project", Dir: project},
		{Name: "dir", Dir: dir1}, {Name: "dir", Dir: dir2},
	})
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	want := []got{ // sorted by name
		{"dirs", "d2", "dir"},       // a later --plugin-dir wins over an earlier one
		{"everywhere", "d1", "dir"}, // a --plugin-dir wins over both layers
		{"only-project", "p", "project"},
		{"only-user", "u", "user"},
		{"shared", "p", "project"}, // the project wins over the user
	}
	if g := summary(found); !reflect.DeepEqual(g, want) {
		t.Errorf("found = %+v\nwant    %+v", g, want)
	}
	// What each winner hides, highest layer first: shadowing is never
	// silent.
	shadows := map[string][]got{}
	for _, m := range found {
		if len(m.Shadows) > 0 {
			shadows[m.Name] = summary(m.Shadows)
		}
	}
	wantShadows := map[string][]got{
		"dirs":       {{"dirs", "d1", "dir"}},
		"everywhere": {{"everywhere", "p", "project"}, {"everywhere", "u", "user"}},
		"shared":     {{"shared", "u", "user"}},
	}
	if !reflect.DeepEqual(shadows, wantShadows) {
		t.Errorf("shadows = %+v\nwant      %+v", shadows, wantShadows)
	}
}

func TestDiscoverBrokenManifests(t *testing.T) {
	tmp := t.TempDir()
	user := filepath.Join(tmp, "user")
	project := filepath.Join(tmp, "project")

	plugin(t, user, "alpha", "u")
	plugin(t, user, "beta", "u")
	writePlugin(t, user, "gamma", `{"name": "gamma"`)                                            // broken, nothing above it
	writePlugin(t, project, "alpha", `{"name": "alpha", "version": "p", "entry": {"cmd": "x"}}`) // broken over a valid one
	plugin(t, project, "delta", "p")
	writePlugin(t, project, "epsilon", `{"name": "other", "version": "p", "entry": {"command": "x"}}`)

	found, problems := manifest.Discover([]manifest.Layer{{Name: "user", Dir: user}, {Name: "project", Dir: project}})

	want := []got{
		{"alpha", "u", "user"}, // the broken project manifest does not hide the user's
		{"beta", "u", "user"},
		{"delta", "p", "project"},
	}
	if g := summary(found); !reflect.DeepEqual(g, want) {
		t.Errorf("found = %+v\nwant    %+v", g, want)
	}
	wantFiles := []string{ // layer order, then name order
		filepath.Join(user, "gamma", "plugin.json"),
		filepath.Join(project, "alpha", "plugin.json"),
		filepath.Join(project, "epsilon", "plugin.json"),
	}
	if g := problemFiles(problems); !reflect.DeepEqual(g, wantFiles) {
		t.Errorf("problem files = %q\nwant            %q", g, wantFiles)
	}
	for i, reason := range []string{"invalid JSON", `unknown field "entry.cmd"`, `name "other" does not match the directory name "epsilon"`} {
		if i < len(problems) && !strings.Contains(problems[i].Error(), reason) {
			t.Errorf("problem %d = %q, want it to say %q", i, problems[i], reason)
		}
	}
}

func TestDiscoverWhatIsAPluginDir(t *testing.T) {
	tmp := t.TempDir()
	layer := filepath.Join(tmp, "layer")
	plugin(t, layer, "real", "1")

	// A plain file in the layer directory is ignored, even one named like
	// a manifest.
	touch(t, filepath.Join(layer, "README.md"))
	if err := os.WriteFile(filepath.Join(layer, "plugin.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sub-directory without plugin.json is skipped silently.
	mkdir(t, filepath.Join(layer, "not-a-plugin", "src"))
	mkdir(t, filepath.Join(layer, ".git"))
	// A symlinked plugin directory is followed; its link name is its name.
	elsewhere := filepath.Join(tmp, "elsewhere")
	plugin(t, elsewhere, "linked", "1")
	if err := os.Symlink(filepath.Join(elsewhere, "linked"), filepath.Join(layer, "linked")); err != nil {
		t.Fatal(err)
	}
	// A symlink to a file is a file: ignored.
	if err := os.Symlink(filepath.Join(layer, "README.md"), filepath.Join(layer, "readme-link")); err != nil {
		t.Fatal(err)
	}
	// A symlink whose target is gone is reported.
	if err := os.Symlink(filepath.Join(tmp, "gone"), filepath.Join(layer, "dangling")); err != nil {
		t.Fatal(err)
	}
	// So is a plugin.json that is a symlink to nothing: it is no missing
	// manifest.
	mkdir(t, filepath.Join(layer, "lost"))
	if err := os.Symlink(filepath.Join(tmp, "gone.json"), filepath.Join(layer, "lost", "plugin.json")); err != nil {
		t.Fatal(err)
	}

	found, problems := manifest.Discover([]manifest.Layer{
		{Name: "user", Dir: filepath.Join(tmp, "missing")}, // a missing layer is not a problem
		{Name: "dir", Dir: layer},
	})
	if g, want := summary(found), []got{{"linked", "1", "dir"}, {"real", "1", "dir"}}; !reflect.DeepEqual(g, want) {
		t.Errorf("found = %+v, want %+v", g, want)
	}
	if len(found) == 2 {
		if want := filepath.Join(layer, "linked"); found[0].Root != want {
			t.Errorf("linked Root = %q, want the link's path %q", found[0].Root, want)
		}
	}
	if g, want := problemFiles(problems), []string{filepath.Join(layer, "dangling"), filepath.Join(layer, "lost", "plugin.json")}; !reflect.DeepEqual(g, want) {
		t.Errorf("problems = %v, want one for each of %v", problems, want)
	} else if !errors.Is(problems[0], fs.ErrNotExist) || !strings.Contains(problems[0].Error(), "symlink") || !errors.Is(problems[1], fs.ErrNotExist) {
		t.Errorf("problems = %q", problems)
	}
}

// A --plugin-dir naming the plugin itself (the one being written) loads
// that plugin alone, under the same rules as in a directory of plugins,
// and wins its name like any --plugin-dir.
func TestDiscoverSinglePluginLayer(t *testing.T) {
	tmp := t.TempDir()
	user := filepath.Join(tmp, "user")
	plugin(t, user, "wc", "u")
	plugin(t, user, "other", "u")
	work := filepath.Join(tmp, "work")
	plugin(t, work, "wc", "w")
	plugin(t, filepath.Join(work, "wc"), "nested", "n") // inside the plugin: not a plugin of the layer
	writePlugin(t, work, "misnamed", `{"name": "wc", "version": "m", "entry": {"command": "x"}}`)

	found, problems := manifest.Discover([]manifest.Layer{
		{Name: "user", Dir: user},
		{Name: "dir", Dir: filepath.Join(work, "wc"), Single: true},
		{Name: "dir", Dir: filepath.Join(work, "misnamed"), Single: true},
	})
	if g, want := summary(found), []got{{"other", "u", "user"}, {"wc", "w", "dir"}}; !reflect.DeepEqual(g, want) {
		t.Errorf("found = %+v, want %+v", g, want)
	}
	if len(found) == 2 && (len(found[1].Shadows) != 1 || found[1].Root != filepath.Join(work, "wc")) {
		t.Errorf("wc: Root %s, shadows %+v; want the --plugin-dir itself, hiding the user's", found[1].Root, summary(found[1].Shadows))
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `name "wc" does not match the directory name "misnamed"`) {
		t.Errorf("problems = %v, want the misnamed one", problems)
	}
}

func TestDiscoverUnreadableLayer(t *testing.T) {
	tmp := t.TempDir()
	notDir := filepath.Join(tmp, "file")
	touch(t, notDir)
	ok := filepath.Join(tmp, "ok")
	plugin(t, ok, "wc", "1")

	found, problems := manifest.Discover([]manifest.Layer{{Name: "dir", Dir: notDir}, {Name: "dir", Dir: ok}})
	if g, want := summary(found), []got{{"wc", "1", "dir"}}; !reflect.DeepEqual(g, want) {
		t.Errorf("found = %+v, want %+v", g, want)
	}
	if len(problems) != 1 || problems[0].File != notDir || !strings.Contains(problems[0].Error(), "cannot read the dir layer directory") {
		t.Errorf("problems = %v, want one naming %s", problems, notDir)
	}
}

func TestDiscoverEmpty(t *testing.T) {
	found, problems := manifest.Discover(nil)
	if found == nil || len(found) != 0 || len(problems) != 0 {
		t.Errorf("Discover(nil) = %v, %v", found, problems)
	}
}

// A held-back winner gives its name to the copy it shadowed, which keeps
// the copies below it; one that shadows nothing, or that hold lets be,
// keeps its name.
func TestHoldBack(t *testing.T) {
	user := &manifest.Manifest{Name: "a", Layer: manifest.LayerUser}
	project := &manifest.Manifest{Name: "a", Layer: manifest.LayerProject, Shadows: []*manifest.Manifest{user}}
	alone := &manifest.Manifest{Name: "b", Layer: manifest.LayerProject}
	dir := &manifest.Manifest{Name: "c", Layer: manifest.LayerDir, Shadows: []*manifest.Manifest{{Name: "c", Layer: manifest.LayerUser}}}
	kept, held := manifest.HoldBack([]*manifest.Manifest{project, alone, dir}, func(m *manifest.Manifest) bool { return m.Layer == manifest.LayerProject })
	if len(kept) != 3 || kept[0] != user || kept[1] != alone || kept[2] != dir {
		t.Fatalf("kept = %v", kept)
	}
	if len(held) != 1 || held[0] != project || project.Shadows != nil || len(user.Shadows) != 0 || len(dir.Shadows) != 1 {
		t.Fatalf("held = %v, project shadows %v, user shadows %v", held, project.Shadows, user.Shadows)
	}
}

// A layer with Most loads its first Most plugins by name; the rest are one
// problem.
func TestDiscoverLoadsAtMostMost(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"d", "a", "c", "b", "e"} {
		plugin(t, dir, name, "1")
	}
	found, problems := manifest.Discover([]manifest.Layer{{Name: "project", Dir: dir, Most: 2}})
	if got := summary(found); len(got) != 2 || got[0].name != "a" || got[1].name != "b" {
		t.Fatalf("found %v", got)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "holds 5 plugin directories, and at most 2 of a project layer are loaded (the first by name): c and 2 more not loaded") {
		t.Fatalf("problems %v", problems)
	}
}
