package scaffold

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Every language writes a valid manifest named as asked, and no template
// text is left unexpanded.
func TestWriteEveryLang(t *testing.T) {
	for _, lang := range Langs {
		dir := filepath.Join(t.TempDir(), "my-plugin")
		files, err := Write(dir, "my-plugin", lang, "")
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		if _, err := manifest.Load(dir, "dir"); err != nil {
			t.Errorf("%s: the manifest: %v", lang, err)
		}
		for _, f := range files {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if strings.Contains(string(b), "{{") || strings.Contains(string(b), "<no value>") {
				t.Errorf("%s: %s holds unexpanded template text", lang, f)
			}
			if strings.HasSuffix(f, ".json") && !json.Valid(b) {
				t.Errorf("%s: %s is not JSON", lang, f)
			}
		}
		if !strings.Contains(strings.Join(files, " "), "README.md") {
			t.Errorf("%s: no README in %v", lang, files)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	for _, c := range []struct{ dir, name, lang, kit, want string }{
		{filepath.Join(dir, "a"), "Bad", "python", "", "invalid plugin name"},
		{filepath.Join(dir, "b"), "b", "cobol", "", "choose one of python, node, go, wasm, c, rust"},
		{dir, "c", "node", "", "is not empty"},
		{filepath.Join(dir, "d"), "d", "go", "../..", "--kit is for wasm"},
		{filepath.Join(dir, "e"), "e", "wasm", dir, "not a checkout of " + Kit},
	} {
		if _, err := Write(c.dir, c.name, c.lang, c.kit); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%s, %s, %s, %q) = %v, want %q", c.dir, c.name, c.lang, c.kit, err, c.want)
		}
	}
}

// A wasm plugin's go.mod states the go version Kit's own go.mod does (a
// module requiring Kit may state no less), requires Kit, and points at
// the checkout --kit names, or else at the copy of Kit written beside it,
// which holds Kit's non-test Go files and a go.mod requiring nothing.
func TestWasmModule(t *testing.T) {
	root, _ := filepath.Abs("../..")
	kit, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kit), "\ngo "+goVersion+"\n") {
		t.Errorf("goVersion is %s; Kit's go.mod says otherwise:\n%s", goVersion, kit)
	}
	for _, k := range []string{"", "../.."} {
		dir := filepath.Join(t.TempDir(), "w")
		if _, err := Write(dir, "w", "wasm", k); err != nil {
			t.Fatal(err)
		}
		mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		want := "module w\n\ngo " + goVersion + "\n\nrequire " + Kit + " " + unpublished + "\n\n"
		if k != "" {
			want += "// pluginkit and sdk from a bingo checkout (bingo plugins new --kit).\nreplace " + Kit + " => " + root + "\n"
		} else {
			want += "// pluginkit and sdk from the copy beside this plugin, written by bingo\n// plugins new: it needs nothing but Go's standard library.\nreplace " + Kit + " => ./kit\n"
		}
		if string(mod) != want {
			t.Errorf("--kit %q: go.mod is\n%s\nwant\n%s", k, mod, want)
		}
		_, err := os.Stat(filepath.Join(dir, KitCopy))
		if copied := err == nil; copied != (k == "") {
			t.Errorf("--kit %q: kit/ written: %v", k, copied)
		}
	}

	dir := filepath.Join(t.TempDir(), "w")
	if _, err := Write(dir, "w", "wasm", ""); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"sdk", "protocol", "pluginkit"} {
		src, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		for _, f := range src {
			copied, err := os.ReadFile(filepath.Join(dir, KitCopy, pkg, filepath.Base(f)))
			if strings.HasSuffix(f, "_test.go") {
				if err == nil {
					t.Errorf("the kit copy holds a test file %s/%s", pkg, filepath.Base(f))
				}
				continue
			}
			orig, _ := os.ReadFile(f)
			if err != nil || !bytes.Equal(copied, orig) {
				t.Errorf("the kit copy's %s/%s differs from the source (%v)", pkg, filepath.Base(f), err)
			}
		}
	}
	if mod, _ := os.ReadFile(filepath.Join(dir, KitCopy, "go.mod")); !strings.Contains(string(mod), "module "+Kit+"\n\ngo "+goVersion+"\n") || strings.Contains(string(mod), "require") {
		t.Errorf("the kit copy's go.mod:\n%s", mod)
	}
}

// A checkout whose path has a space in it is named in a replace directive
// go can read: go.mod splits an unquoted path at the space.
func TestWasmModuleKitPathWithASpace(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	kit := filepath.Join(t.TempDir(), "my bingo")
	if err := os.MkdirAll(kit, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kit, "go.mod"), []byte("module "+Kit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "w")
	if _, err := Write(dir, "w", "wasm", kit); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, out)
	}
	var mod struct {
		Replace []struct{ New struct{ Path string } }
	}
	if err := json.Unmarshal(out, &mod); err != nil || len(mod.Replace) != 1 || mod.Replace[0].New.Path != kit {
		t.Errorf("go.mod's replace: %s (%v); want %q", out, err, kit)
	}
}

// The C scaffold's JSON reader is the C example's (examples/plugins/
// wordcount-c), which the parity test holds to main.py on hostile input:
// the two copies, each standing alone, stay one.
func TestCJSONIsTheExamples(t *testing.T) {
	for _, f := range []string{"json.c", "json.h"} {
		mine, err := templates.ReadFile("templates/c/" + f)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join("..", "..", "examples", "plugins", "wordcount-c", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mine, theirs) {
			t.Errorf("templates/c/%s differs from examples/plugins/wordcount-c/%s: change both", f, f)
		}
	}
}

// The Rust build.sh builds for the WASI target the rustc it runs has:
// wasm32-wasip1 (Rust 1.78 on; 1.84 dropped wasm32-wasi), else
// wasm32-wasi (Debian's older Rust). Stand-ins for rustc and cargo, named
// by RUSTC and CARGO, offer one target each and build for it alone.
func TestRustBuildTarget(t *testing.T) {
	for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
		t.Run(target, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "rgreet")
			if _, err := Write(dir, "rgreet", "rust", ""); err != nil {
				t.Fatal(err)
			}
			rustc := filepath.Join(tmp, "rustc")
			cargo := filepath.Join(tmp, "cargo")
			script := func(path, body string) {
				if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			script(rustc, "printf 'wasm32-unknown-unknown\\n"+target+"\\nx86_64-unknown-linux-gnu\\n'\n")
			// cargo build ... --target T ...: only T is there.
			script(cargo, `while [ $# -gt 0 ]; do [ "$1" = --target ] && t=$2; shift; done
[ "$t" = `+target+` ] || { echo "error: no target $t" >&2; exit 1; }
mkdir -p target/$t/release && echo "built for $t" > target/$t/release/rgreet.wasm
`)
			cmd := exec.Command("sh", filepath.Join(dir, "build.sh"))
			cmd.Env = append(os.Environ(), "CARGO="+cargo, "RUSTC="+rustc)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("build.sh: %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "plugin.wasm")); string(got) != "built for "+target+"\n" {
				t.Errorf("plugin.wasm: %q, want the build for %s", got, target)
			}
		})
	}
}
