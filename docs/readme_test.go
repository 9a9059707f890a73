package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// userDocs are the pages a person reads: the README and every page here.
func userDocs(t *testing.T) []string {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	notes, _ := filepath.Glob(filepath.Join("*", "*.md"))
	return append(append([]string{"../README.md"}, pages...), notes...)
}

// TestReadmeIsForUsers: the README stays a page a person reads once — the
// two commands first, at most ~150 lines — and no page a person reads
// points outside the repository, at an address that is not there, or at
// the project's bookkeeping (issue numbers, commit hashes).
func TestReadmeIsForUsers(t *testing.T) {
	readme := read(t, "../README.md")
	lines := strings.Split(strings.TrimRight(readme, "\n"), "\n")
	if len(lines) > 150 {
		t.Errorf("README.md has %d lines; it is for people using bingo, at most 150 (measurements go to docs/performance.md, history to docs/design.md)", len(lines))
	}
	var cmds []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "    ") {
			cmds = append(cmds, strings.Fields(l)[0]+" "+strings.Fields(l)[1])
		} else if strings.TrimSpace(l) != "" && len(cmds) > 0 {
			break
		}
	}
	if strings.Join(cmds, ", ") != "make demo, make test" {
		t.Errorf("README.md's first lines give %q, want exactly the demo and the test command", cmds)
	}

	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)]*)?\)`)
	bookkeeping := regexp.MustCompile(`(?i)\bissue (#|no\.? ?)?\d+|\b[0-9a-f]{7,40}\b`)
	for _, page := range userDocs(t) {
		text := read(t, page)
		root, _ := filepath.Abs("..")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			abs, _ := filepath.Abs(filepath.Join(filepath.Dir(page), target))
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links to %s, outside the repository", page, target)
			} else if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links to %s, which is not there", page, target)
			}
		}
		if strings.Contains(text, "../shared") {
			t.Errorf("%s points at ../shared, which is not in the repository", page)
		}
		for _, m := range bookkeeping.FindAllString(text, -1) {
			if regexp.MustCompile(`^[0-9]+$`).MatchString(m) {
				continue // a number, not a hash
			}
			t.Errorf("%s names %q: issue numbers and commit hashes are the project's bookkeeping, not the reader's", page, m)
		}
	}
}

// TestTableOfContents: every section of plugins.md is in its table of
// contents, by the anchor a Markdown renderer gives it.
func TestTableOfContents(t *testing.T) {
	text := read(t, pluginsDoc)
	anchor := func(h string) string {
		h = strings.ToLower(h)
		h = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(h, "")
		return strings.ReplaceAll(h, " ", "-")
	}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(text, -1) {
		entry := "- [" + m[1] + "](#" + anchor(m[1]) + ")"
		if !strings.Contains(text, entry+"\n") {
			t.Errorf("plugins.md's table of contents lacks %s", entry)
		}
	}
}
