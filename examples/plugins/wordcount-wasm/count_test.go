package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want counts
	}{
		{"empty", "", counts{}},
		{"notes", "the quick brown fox\njumps over the lazy dog\n", counts{Lines: 2, Words: 9, Chars: 44, Bytes: 44}},
		{"no final newline", "one two\nthree", counts{Lines: 2, Words: 3, Chars: 13, Bytes: 13}},
		{"only newlines", "\n\n", counts{Lines: 2, Chars: 2, Bytes: 2}},
		{"multi-byte", "héllo wörld €\n", counts{Lines: 1, Words: 3, Chars: 14, Bytes: 18}},
		{"invalid bytes count one each", "a\xff\xfeb \xe2\x82", counts{Lines: 1, Words: 2, Chars: 7, Bytes: 7}},
		{"surrogate half is three invalid bytes", "\xed\xa0\x80", counts{Lines: 1, Words: 1, Chars: 3, Bytes: 3}},
		{"all six ASCII separators", "a b\tc\nd\re\vf\fg", counts{Lines: 2, Words: 7, Chars: 13, Bytes: 13}},
		// \x1c and U+00A0 are whitespace to Python's str.split and Go's
		// unicode.IsSpace; the contract says they are not.
		{"no other separators", "a\x1cb\u00a0c\u2003d", counts{Lines: 1, Words: 1, Chars: 7, Bytes: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := count([]byte(tc.data)); got != tc.want {
				t.Errorf("count(%q) = %+v, want %+v", tc.data, got, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range [][3]string{
		{"/w", "a.txt", "/w/a.txt"},
		{"/w/", "a.txt", "/w/a.txt"},
		{"/w", "/abs/a.txt", "/abs/a.txt"},
		{"", "a.txt", "a.txt"},
		{"/w", "x/../a.txt", "/w/x/../a.txt"}, // not cleaned: the file system decides
	} {
		if got := resolve(tc[0], tc[1]); got != tc[2] {
			t.Errorf("resolve(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestReadFileReasons(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "notes.txt"), "hello\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "secret.txt"), "x")
	if err := os.Chmod(filepath.Join(dir, "secret.txt"), 0); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"missing.txt":               "wordcount-wasm: cannot read missing.txt: no such file or directory",
		"notes.txt/inside":          "wordcount-wasm: cannot read notes.txt/inside: no such file or directory",
		"sub":                       "wordcount-wasm: cannot read sub: is a directory",
		"/dev/null":                 "wordcount-wasm: cannot read /dev/null: not a regular file",
		filepath.Join("secret.txt"): "wordcount-wasm: cannot read secret.txt: permission denied",
	}
	if os.Geteuid() == 0 {
		delete(cases, "secret.txt") // root reads anything
	}
	for p, want := range cases {
		_, err := readFile(dir, p)
		if err == nil || err.Error() != want {
			t.Errorf("readFile(%q) error = %v, want %q", p, err, want)
		}
	}
	data, err := readFile(dir, "notes.txt")
	if err != nil || string(data) != "hello\n" {
		t.Errorf("readFile(notes.txt) = %q, %v", data, err)
	}
}

func TestTableAndSummary(t *testing.T) {
	c := counts{Lines: 2, Words: 9, Chars: 44, Bytes: 44}
	if got, want := summary("notes.txt", c), "notes.txt: 2 lines, 9 words, 44 characters, 44 bytes"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	want := "wordcount\nfile       lines  words  chars  bytes\nnotes.txt  2      9      44     44"
	if got := table("notes.txt", c).Fold(); got != want {
		t.Errorf("table fold =\n%s\nwant\n%s", got, want)
	}
}

func TestComplete(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes.txt", "nothing.md", "b.txt", ".hidden", "docs/a.txt", "docs/.b"} {
		write(t, filepath.Join(dir, f), "x")
	}
	if err := os.Symlink("docs", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		partial string
		want    []string
	}{
		{"", []string{"b.txt", "docs/", "link/", "notes.txt", "nothing.md"}},
		{"no", []string{"notes.txt", "nothing.md"}},
		{".", []string{".hidden"}},
		{"docs/", []string{"docs/a.txt"}},
		{"docs/.", []string{"docs/.b"}},
		{dir + "/d", []string{dir + "/docs/"}},
		{"missing/", []string{}},
		{"zzz", []string{}},
	} {
		got := []string{}
		for _, c := range complete(dir, tc.partial) {
			got = append(got, c.Value)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("complete(%q) = %q, want %q", tc.partial, got, tc.want)
		}
	}
	if got := complete(dir, "zzz"); got == nil {
		t.Error("no completions must be an empty list, not nil (null on the wire)")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManifests loads the examples' plugin.json the way the host does,
// each in a directory of its own name: the name the manifest must carry.
func TestManifests(t *testing.T) {
	for _, tc := range []struct{ from, name, transport, entry string }{
		{"../wordcount", "wordcount", manifest.TransportExec, "python3 <root>/main.py"},
		{"../wordcount-node", "wordcount-node", manifest.TransportExec, "node <root>/main.js"},
		{".", "wordcount-wasm", manifest.TransportWasm, "<root>/plugin.wasm"},
	} {
		data, err := os.ReadFile(filepath.Join(tc.from, manifest.FileName))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), tc.name)
		write(t, filepath.Join(dir, manifest.FileName), string(data))
		m, err := manifest.Load(dir, manifest.LayerUser)
		if err != nil {
			t.Fatalf("%s: %v", tc.from, err)
		}
		entry := strings.Join(append([]string{m.Entry.Command + m.Entry.Wasm}, m.Entry.Args...), " ")
		entry = strings.ReplaceAll(entry, m.Root, "<root>")
		if m.Name != tc.name || m.Version != "0.1.0" || m.Entry.Transport() != tc.transport || entry != tc.entry {
			t.Errorf("%s: %s %s %s %q", tc.from, m.Name, m.Version, m.Entry.Transport(), entry)
		}
	}
	if got := newPlugin(io.Discard).Name; got != "wordcount-wasm" {
		t.Errorf("the plugin calls itself %q, not its manifest's name", got)
	}
}
