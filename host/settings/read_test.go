package settings

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// padded returns valid settings, which would apply if read, padded with
// spaces to size bytes.
func padded(size int) string {
	const s = `{"turn": {"maxSteps": 1}}`
	return s + strings.Repeat(" ", size-len(s))
}

// refused checks that errs is one *Error for file, unplaced, saying want.
func refused(t *testing.T, errs []error, file string, want error) {
	t.Helper()
	var e *Error
	if len(errs) != 1 || !errors.As(errs[0], &e) || e.File != file || e.Line != 0 || !errors.Is(e, want) {
		t.Fatalf("errs = %v, want one *Error for %s: %v", errs, file, want)
	}
}

// checkRefused checks that file, as the user's or the project's file, or
// given to Load, is refused with want and that nothing of it applies.
func checkRefused(t *testing.T, file string, want error) {
	t.Helper()
	s, errs := Load(file)
	refused(t, errs, file, want)
	if !reflect.DeepEqual(s, Default()) {
		t.Errorf("Load applied part of the file: %+v", s)
	}
	ld := LoadLayered(file, Project{})
	refused(t, ld.Errs, file, want)
	ld2 := LoadLayered("", Project{File: file, Trusted: true})
	refused(t, ld2.Errs, file, want)
	for _, s := range []Settings{ld.Settings, ld.User, ld2.Settings} {
		if !reflect.DeepEqual(s, Default()) {
			t.Errorf("LoadLayered applied part of the file: %+v", s)
		}
	}
}

func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	checkRefused(t, write(t, dir, "2mib.json", padded(2<<20)), errTooLarge)
	checkRefused(t, write(t, dir, "just-over.json", padded(MaxFileSize+1)), errTooLarge)
	if got := errTooLarge.Error(); !strings.Contains(got, "larger than the 1 MiB limit for a settings file") {
		t.Errorf("message %q", got)
	}

	// A file at the limit is read.
	s, errs := Load(write(t, dir, "limit.json", padded(MaxFileSize)))
	if len(errs) > 0 || s.Turn.MaxSteps != 1 {
		t.Errorf("a file of exactly MaxFileSize: %v, %+v", errs, s.Turn)
	}
}

// A file too large to read whole is refused before any of it is read:
// reading a terabyte, or making room for it, would not come back.
func TestTooLargeNotRead(t *testing.T) {
	file := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(1 << 40) // sparse: no disk is used
	f.Close()
	if err != nil {
		t.Skipf("cannot make a sparse file here: %v", err)
	}
	checkRefused(t, file, errTooLarge)
}
