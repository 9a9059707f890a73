package lookpath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"runme": 0o700, "plain": 0o600} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, command, dir string
		env                []string
		want               string // "" = ErrNotFound
	}{
		{name: "bare name in the entry's PATH", command: "runme", env: []string{"PATH=/nonexistent:" + bin}, want: filepath.Join(bin, "runme")},
		{name: "the last PATH wins", command: "runme", env: []string{"PATH=" + bin, "PATH=/nonexistent"}},
		{name: "not executable", command: "plain", env: []string{"PATH=" + bin}},
		{name: "relative PATH entry", command: "runme", env: []string{"PATH=bin"}, dir: dir},
		{name: "relative path against dir", command: "bin/plain", dir: dir, want: filepath.Join(bin, "plain")},
		{name: "absolute path", command: filepath.Join(bin, "runme"), dir: "/", want: filepath.Join(bin, "runme")},
		{name: "missing path", command: "bin/absent", dir: dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Find(tc.command, tc.dir, tc.env)
			if tc.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find = %q, %v; want ErrNotFound", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Find = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
