package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// This file is the plugin's logic with no wire in it: counting, reading a
// file with the error reasons the contract names, the table View, and
// completion. It uses nothing wasip1-only, so its tests run on the host too.
// Every rule here has a twin in ../wordcount/main.py, and the two must give
// the same answers byte for byte.

// whitespace is the contract's word separator: exactly the six ASCII bytes
// Python's bytes.split() splits on. Unicode spaces are not separators, so
// the two implementations cannot drift on what a "space" is.
const whitespace = " \t\n\r\v\f"

// isSpace reports whether b is one of the bytes in whitespace.
func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '\v', '\f':
		return true
	}
	return false
}

// counts is what the tool reports about one file.
type counts struct {
	Lines, Words, Chars, Bytes int
}

// count counts data. Chars are Unicode code points, with every byte that is
// not part of valid UTF-8 counted as one char on its own (Python's
// surrogateescape decoding does the same). Lines are "\n" bytes, plus one
// for a last line without its newline.
func count(data []byte) counts {
	c := counts{Bytes: len(data)}
	inWord := false
	for _, b := range data {
		if b == '\n' {
			c.Lines++
		}
		if isSpace(b) {
			inWord = false
		} else if !inWord {
			inWord = true
			c.Words++
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		c.Lines++
	}
	for rest := data; len(rest) > 0; c.Chars++ {
		// An invalid byte decodes as (RuneError, 1): one char, one byte.
		_, size := utf8.DecodeRune(rest)
		rest = rest[size:]
	}
	return c
}

// The reasons a read can fail, as the contract spells them. The language's
// own error text never reaches the wire: it differs between Go and Python,
// and between platforms.
const (
	reasonNotExist   = "no such file or directory"
	reasonIsDir      = "is a directory"
	reasonPermission = "permission denied"
	reasonNotRegular = "not a regular file"
	reasonFailed     = "read failed"
)

// readError is a read that failed, for one of the reasons above.
type readError struct {
	path   string // as the caller gave it, not resolved
	reason string
}

func (e *readError) Error() string {
	return fmt.Sprintf("%s: cannot read %s: %s", pluginName, e.path, e.reason)
}

// reasonOf maps an error from the file system onto a contract reason.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), outsideSandbox(err):
		return reasonNotExist
	case errors.Is(err, syscall.EISDIR):
		return reasonIsDir
	case errors.Is(err, fs.ErrPermission):
		return reasonPermission
	}
	return reasonFailed
}

// resolve makes p absolute against cwd, the way Python's os.path.join does:
// no cleaning, so "a/../b" means what the file system says it means.
func resolve(cwd, p string) string {
	if cwd == "" || filepath.IsAbs(p) {
		return p
	}
	if strings.HasSuffix(cwd, "/") {
		return cwd + p
	}
	return cwd + "/" + p
}

// readFile reads the file at p (resolved against cwd). It stats first so a
// directory or a FIFO is refused by kind instead of blocking or half-reading.
func readFile(cwd, p string) ([]byte, error) {
	full := resolve(cwd, p)
	info, err := os.Stat(full)
	if err != nil {
		return nil, &readError{p, reasonOf(err)}
	}
	if info.IsDir() {
		return nil, &readError{p, reasonIsDir}
	}
	if !isRegular(info) {
		return nil, &readError{p, reasonNotRegular}
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, &readError{p, reasonOf(err)}
	}
	return data, nil
}

// summary is the tool's text for the model.
func summary(p string, c counts) string {
	return fmt.Sprintf("%s: %d lines, %d words, %d characters, %d bytes", p, c.Lines, c.Words, c.Chars, c.Bytes)
}

// table is the View for the person, shared by the tool and the command.
func table(p string, c counts) *sdk.View {
	return &sdk.View{
		Kind:    sdk.ViewTable,
		Title:   "wordcount",
		Columns: []string{"file", "lines", "words", "chars", "bytes"},
		Rows: [][]string{{
			p, strconv.Itoa(c.Lines), strconv.Itoa(c.Words), strconv.Itoa(c.Chars), strconv.Itoa(c.Bytes),
		}},
	}
}

// complete lists what partial could become: the entries of the directory
// it names (relative to cwd) whose names start with what follows its last
// "/". Hidden names only show when asked for with a leading ".". An
// unreadable directory completes to nothing; it is never an error.
func complete(cwd, partial string) []sdk.Completion {
	dir, prefix := "", partial
	if i := strings.LastIndexByte(partial, '/'); i >= 0 {
		dir, prefix = partial[:i+1], partial[i+1:]
	}
	where := cwd
	if dir != "" {
		where = resolve(cwd, dir)
	}
	entries, err := os.ReadDir(where) // sorted by name, byte order
	out := []sdk.Completion{}         // [] on the wire, never null
	if err != nil {
		return out
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".")) {
			continue
		}
		value := dir + name
		if isDir(filepath.Join(where, name), e) {
			value += "/"
		}
		out = append(out, sdk.Completion{Value: value})
	}
	return out
}

// isDir says whether an entry is a directory, following a symbolic link
// the way Python's DirEntry.is_dir() does.
func isDir(full string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	info, err := os.Stat(full)
	return err == nil && info.IsDir()
}
