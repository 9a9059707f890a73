package schema

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ModuleRoot returns the directory holding this module's go.mod, searched
// from the working directory upwards. Generate reads doc comments from the
// source there, and cmd schema/gen writes File under it; both `go run
// ./schema/gen` (run at the root) and `go generate` (run in schema/) find it.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("schema: finding the module root: %w", err)
	}
	for dir := wd; ; {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(b, modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("schema: no go.mod of module %s in %s or above it: run from inside the source tree", modulePath, wd)
		}
		dir = parent
	}
}

func declaresModule(gomod []byte, path string) bool {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
}

// readComments maps "importpath.Type" and "importpath.Type.Field" to the doc
// comment of that type or field, in the given package directories under
// root. A type's comment is kept whole (the zero-value rules of ToolTraits
// are in its second sentence); lines within a paragraph are joined.
func readComments(root string, pkgs ...string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("schema: no Go files in %s", filepath.Join(root, pkg))
		}
		slices.Sort(files)
		importPath := modulePath + "/" + pkg
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("schema: reading doc comments: %w", err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					typeKey := importPath + "." + ts.Name.Name
					if text := cleanComment(doc); text != "" {
						out[typeKey] = text
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						cg := field.Doc
						if cg == nil {
							cg = field.Comment
						}
						text := cleanComment(cg)
						if text == "" {
							continue
						}
						for _, n := range field.Names {
							out[typeKey+"."+n.Name] = text
						}
					}
				}
			}
		}
	}
	return out, nil
}

// cleanComment turns a Go comment into a description: paragraphs kept,
// the line breaks within them dropped.
func cleanComment(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(cg.Text()), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paras = append(paras, p)
		}
	}
	return strings.Join(paras, "\n\n")
}
