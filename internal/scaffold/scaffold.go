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
	"strings"
	"text/template"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

//go:embed templates
var templates embed.FS

// Langs are the languages a plugin can be written in, by name.
var Langs = []string{"python", "node", "go"}

// data fills the templates.
type data struct {
	Name, Intro, Files, Build string
}

var langData = map[string]data{
	"python": {Intro: " in Python 3, standard library only", Files: "main.py       the plugin: a loop over stdin"},
	"node":   {Intro: " in Node.js (18 or later), no dependencies", Files: "main.js       the plugin: a loop over stdin"},
	"go": {Intro: " in Go, standard library only", Files: "main.go       the plugin: a loop over stdin\ngo.mod        its module",
		Build: "\n## Build\n\nThe manifest runs the binary next to it; build it first, and after every change:\n\n```sh\ngo build -o {{.Name}} .\n```\n"},
}

// Write writes a new plugin named name in lang into dir, which must not
// exist or be empty. It returns the files written, relative to dir.
func Write(dir, name, lang string) ([]string, error) {
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
	root := path.Join("templates", lang)
	var written []string
	err := fs.WalkDir(templates, root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		src, err := templates.ReadFile(p)
		if err != nil {
			return err
		}
		out, err := render(string(src), d)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		// A template that would be Go source or a module file here (the
		// go.mod would even hide its directory from go:embed) is stored
		// as .tmpl.
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if rel == "main.py" || rel == "main.js" {
			mode = 0o755
		}
		if err := os.WriteFile(target, out, mode); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	return written, err
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
