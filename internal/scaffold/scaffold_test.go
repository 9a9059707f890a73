package scaffold

import (
	"encoding/json"
	"os"
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
		files, err := Write(dir, "my-plugin", lang)
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
	for _, c := range []struct{ dir, name, lang, want string }{
		{filepath.Join(dir, "a"), "Bad", "python", "invalid plugin name"},
		{filepath.Join(dir, "b"), "b", "rust", "choose one of python, node, go"},
		{dir, "c", "node", "is not empty"},
	} {
		if _, err := Write(c.dir, c.name, c.lang); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%s, %s, %s) = %v, want %q", c.dir, c.name, c.lang, err, c.want)
		}
	}
}
