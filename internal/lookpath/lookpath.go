// Package lookpath finds the file a plugin's entry.command runs. The exec
// transport starts that file and trust pins it, so both ask here and
// cannot disagree about which file a command names.
//
// The rule: a name with a path separator is that path, a relative one
// taken against the directory the process starts in; a bare name is
// searched in the PATH of the process's environment (the last PATH entry
// wins, as it does for the child), or in bingo's own PATH when that
// environment sets none. Only absolute PATH directories are searched: a
// relative one ("" or ".") would run whatever sits in the session's
// directory under that name, which os/exec.LookPath refuses too (ErrDot).
package lookpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is wrapped by Find's error for a program that does not
// exist. Its text reads on in the message: `program "x" not found in the
// plugin's PATH`.
var ErrNotFound = errors.New("not found")

// Find returns the file that starting name in dir, with the environment
// env ("NAME=value" entries; nil for bingo's own), would execute. dir ""
// is bingo's working directory.
func Find(name, dir string, env []string) (string, error) {
	if name == "" {
		return "", errors.New("no program to run (entry.command is empty)")
	}
	if strings.ContainsRune(name, os.PathSeparator) || strings.ContainsRune(name, '/') {
		path := name
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("program %q %w", path, ErrNotFound)
		}
		return path, nil
	}
	pathList, where := os.Getenv("PATH"), "the host's PATH"
	if v, ok := lastEnv(env, "PATH"); ok {
		pathList, where = v, "the plugin's PATH"
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		path := filepath.Join(d, name)
		if isExecutable(path) {
			return path, nil
		}
	}
	return "", fmt.Errorf("program %q %w in %s", name, ErrNotFound, where)
}

// lastEnv returns the value of key in env; the last entry wins, as it does
// for the child (os/exec keeps the last duplicate).
func lastEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0
}
