package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	bingo "github.com/bingo/bingo-plugin-rpc"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

//go:embed templates
var templates embed.FS

// Langs are the languages a plugin can be written in, by name: wasm is Go
// built for WASI on pluginkit, c and rust are built for WASI with Debian's
// toolchains by the build.sh written beside them; the three run in the
// host's sandbox.
var Langs = []string{"python", "node", "go", "wasm", "c", "rust"}

// Kit is the module a wasm plugin is built on (its pluginkit and sdk).
const Kit = "github.com/bingo/bingo-plugin-rpc"

// goVersion is the go directive of Kit's go.mod, which a module requiring
// it must state too (a test holds the two together).
const goVersion = "1.26.8"

// unpublished is the version a plugin's go.mod requires Kit at: Kit is not
// published on a module proxy, so a replace directive always says where it
// is — the copy this binary carries (KitCopy), or a checkout (--kit).
const unpublished = "v0.0.0-00010101000000-000000000000"

// KitCopy is the directory, inside a new wasm plugin, that Write fills with
// the Kit source this binary carries (bingo.KitSource).
const KitCopy = "kit"

// data fills the templates.
type data struct {
	Name, Intro, Files, Build string
	// Kit: the plugin is built on pluginkit, which speaks the wire.
	Kit bool
	// WASI: the plugin is a WASI module that speaks the wire itself, and
	// comes with inputs.json, a slow call for the check's cancel step.
	WASI bool
	// GoVersion, KitVersion and KitDir fill a pluginkit plugin's go.mod;
	// KitDir is the replace directive's target, quoted as go.mod needs it,
	// and KitChecked says it is a checkout (--kit) rather than the copy.
	GoVersion, KitVersion, KitDir string
	KitChecked                    bool
}

var langData = map[string]data{
	"python": {Intro: " in Python 3, standard library only", Files: "main.py       the plugin: a loop over stdin"},
	"node":   {Intro: " in Node.js (18 or later), no dependencies", Files: "main.js       the plugin: a loop over stdin"},
	"go": {Intro: " in Go, standard library only", Files: "main.go       the plugin: a loop over stdin\ngo.mod        its module",
		Build: "\n## Build\n\nThe manifest runs the binary next to it; build it first, and after every change:\n\n```sh\ngo build -o {{.Name}} .\n```\n"},
	"wasm": {Intro: " in Go, built to WebAssembly and run in bingo's sandbox", Kit: true,
		Files: "main.go       the plugin: a tool and a command, served by pluginkit\ngo.mod        its module, which requires " + Kit,
		Build: "\n## Build\n\nThe manifest runs `plugin.wasm` next to it; build it first, and after every change:\n\n" +
			"```sh\nGOOS=wasip1 GOARCH=wasm go build -o plugin.wasm .\n```\n\n" +
			"`go.mod` requires " + Kit + " (`pluginkit`, `sdk`) and a `replace` line says\n" +
			"where its source is: `kit/`, the copy bingo wrote beside the plugin (it needs\n" +
			"nothing but Go's standard library), or a bingo checkout (`bingo plugins new\n" +
			"--kit DIR`, or `go mod edit -replace " + Kit + "=/path/to/bingo`).\n"},
	"c": {Intro: " in C, built to WebAssembly with wasi-libc and run in bingo's sandbox", WASI: true,
		Files: "main.c        the plugin: a loop over stdin, a tool that stops at tool/cancel\njson.c json.h a small JSON reader\nbuild.sh      builds plugin.wasm\ninputs.json   a slow call, for the check's cancel step",
		Build: "\n## Build\n\nThe manifest runs `plugin.wasm` next to it; build it first, and after every change:\n\n" +
			"```sh\n./build.sh\n```\n\n" +
			"It needs clang and wasi-libc; on Debian or Ubuntu:\n\n" +
			"```sh\napt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32\n```\n\n" +
			"It runs `clang`; set `CC` for another that targets WASI (a wasi-sdk's, say):\n`CC=/opt/wasi-sdk/bin/clang ./build.sh`.\n"},
	"rust": {Intro: " in Rust, built to WebAssembly and run in bingo's sandbox", WASI: true,
		Files: "src/main.rs   the plugin: a loop over stdin, a tool that stops at tool/cancel\nCargo.toml    its crate, which uses serde_json\nbuild.sh      builds plugin.wasm, offline\ninputs.json   a slow call, for the check's cancel step",
		Build: "\n## Build\n\nThe manifest runs `plugin.wasm` next to it; build it first, and after every change:\n\n" +
			"```sh\n./build.sh\n```\n\n" +
			"It needs Debian's Rust, its standard library for wasm32-wasi and serde_json;\non Debian or Ubuntu:\n\n" +
			"```sh\napt-get install rustc cargo libstd-rust-dev-wasm32 librust-serde-json-dev\n```\n\n" +
			"The build is offline: serde_json comes from Debian's crate directory,\n`/usr/share/cargo/registry`. It runs `/usr/bin/cargo` and `/usr/bin/rustc`,\nsince a rustup toolchain earlier on your `PATH` may lack the WASI target; set\n`CARGO` and `RUSTC` for others (`CARGO=~/.cargo/bin/cargo\nRUSTC=~/.cargo/bin/rustc ./build.sh`). It builds for `wasm32-wasip1` if that\n`rustc --print target-list` names it (Rust 1.78 on), else for `wasm32-wasi`\n(Debian's older Rust).\n"},
}

// Write writes a new plugin named name in lang into dir, which must not
// exist or be empty. kit, for a wasm plugin, is a directory holding Kit's
// source to build against ("" for the release this bingo is, if it is
// one). It returns the files written, relative to dir.
func Write(dir, name, lang, kit string) ([]string, error) {
	if err := manifest.ValidName(name); err != nil {
		return nil, err
	}
	if !slices.Contains(Langs, lang) {
		return nil, fmt.Errorf("no template for %q; choose one of %s", lang, strings.Join(Langs, ", "))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty; a new plugin goes in a new directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	d := langData[lang]
	d.Name = name
	var written []string
	if d.Kit {
		var err error
		if d.KitDir, err = kitDir(kit); err != nil {
			return nil, err
		}
		d.KitChecked = d.KitDir != ""
		if !d.KitChecked {
			if err := writeKit(filepath.Join(dir, KitCopy)); err != nil {
				return nil, err
			}
			d.KitDir = "./" + KitCopy
			written = append(written, KitCopy+"/")
		}
		d.GoVersion, d.KitVersion = goVersion, unpublished
	} else if kit != "" {
		return nil, fmt.Errorf("a %s plugin is not built on pluginkit; --kit is for wasm", lang)
	}
	// Each language's own files, then the README they share.
	root := path.Join("templates", lang)
	err := fs.WalkDir(templates, root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := write(dir, p, strings.TrimPrefix(p, root+"/"), d)
		written = append(written, rel)
		return err
	})
	if err != nil {
		return written, err
	}
	rel, err := write(dir, "templates/README.md", "README.md", d)
	return append(written, rel), err
}

// write renders the template at p into dir as rel, returning the name it
// wrote.
func write(dir, p, rel string, d data) (string, error) {
	src, err := templates.ReadFile(p)
	if err != nil {
		return "", err
	}
	out, err := render(string(src), d)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	// A template that would be Go source or a module file here (the
	// go.mod would even hide its directory from go:embed) is stored as
	// .tmpl.
	rel = strings.TrimSuffix(rel, ".tmpl")
	target := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if rel == "main.py" || rel == "main.js" || rel == "build.sh" {
		mode = 0o755
	}
	return rel, os.WriteFile(target, out, mode)
}

// kitDir checks that dir, if set, holds Kit's source, and makes it
// absolute: the plugin's go.mod may be anywhere.
func kitDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	mod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil || !bytes.HasPrefix(mod, []byte("module "+Kit+"\n")) {
		return "", fmt.Errorf("--kit %s: not a checkout of %s (no go.mod naming it)", dir, Kit)
	}
	return modQuote(abs), nil
}

// modQuote quotes a path for go.mod where it must be: go.mod splits a
// bare path at a space, and reads a quote, a bracket, a comma or a
// comment's start in it as syntax.
func modQuote(p string) string {
	syntax := func(r rune) bool {
		return !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune("\"'`()[]{},", r)
	}
	if strings.ContainsFunc(p, syntax) || strings.Contains(p, "//") || strings.Contains(p, "/*") {
		return strconv.Quote(p)
	}
	return p
}

// writeKit writes the Kit source this binary carries into dir: its Go
// files (tests left out) and a go.mod of its own that requires nothing,
// since pluginkit, sdk and protocol use only the standard library.
func writeKit(dir string) error {
	err := fs.WalkDir(bingo.KitSource, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || p == "go.mod" || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := bingo.KitSource.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, src, 0o644)
	})
	if err != nil {
		return err
	}
	mod := fmt.Sprintf("// The source of pluginkit, sdk and protocol, as the bingo that wrote this\n// plugin carries it (bingo plugins new).\nmodule %s\n\ngo %s\n", Kit, goVersion)
	return os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644)
}

// render runs src as a template on d; d's own fields may hold {{.Name}}.
func render(src string, d data) ([]byte, error) {
	var err error
	if d.Build, err = expand(d.Build, d); err != nil {
		return nil, err
	}
	s, err := expand(src, d)
	return []byte(s), err
}

func expand(src string, d data) (string, error) {
	t, err := template.New("").Option("missingkey=error").Parse(src)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}
