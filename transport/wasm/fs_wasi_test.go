package wasm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// home makes a home directory holding .bingo/secret.txt and work/notes.txt,
// and returns it with its .bingo.
func home(t *testing.T) (home, bingo string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	bingo = filepath.Join(home, ".bingo")
	for _, f := range []struct{ path, data string }{
		{filepath.Join(bingo, "secret.txt"), "secret"},
		{filepath.Join(home, "work", "notes.txt"), "notes"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home, bingo
}

// A directory read again from cookie 0 is the directory that was opened,
// whatever its name now leads to: here a link to ~/.bingo put in its
// place after it was renamed. (wazero rewinds by reopening the name.)
func TestRewoundDirectoryIsTheSame(t *testing.T) {
	home, bingo := home(t)
	p := startC(t, sharedHost, Config{Dir: home, Writable: true, Hide: bingo})
	work := filepath.Join(home, "work")
	got := p.ask("rewind " + work + " " + filepath.Join(home, "moved") + " .bingo")
	if got != "ok notes.txt" {
		t.Errorf("the rewound directory lists %q, want the one opened: ok notes.txt", got)
	}
	if target, err := os.Readlink(work); err != nil || target != ".bingo" {
		t.Fatalf("the guest did not put its link in place: %q, %v", target, err)
	}
	// And in a mount that hides nothing, the same.
	plain := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plain, "d", "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(plain, "other", "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	q := startC(t, sharedHost, Config{Dir: plain, Writable: true})
	if got := q.ask("rewind " + filepath.Join(plain, "d") + " " + filepath.Join(plain, "d2") + " other"); got != "ok inside" {
		t.Errorf("the rewound directory lists %q, want ok inside", got)
	}
}

// ~/.bingo is hidden by what it is, not by how it is spelled: on a
// case-insensitive file system (APFS, NTFS, FAT) ".BINGO" is ~/.bingo, and
// a comparison of names let a guest read it, list it and plant a plugin in
// it. Linux here has no case folding, so the test gives the directory a
// name the hider never compared with the same way: once the guest runs,
// ~/.bingo is renamed to ~/.BINGO. Reached under the new name it must stay
// hidden, as under any other spelling of it.
func TestHiddenByIdentityNotSpelling(t *testing.T) {
	home, bingo := home(t)
	p := startC(t, sharedHost, Config{Dir: home, Writable: true, Hide: bingo})
	if got := p.ask("read " + filepath.Join(bingo, "secret.txt")); got != "err 44" {
		t.Fatalf("read ~/.bingo/secret.txt = %q, want ENOENT (err 44)", got)
	}
	upper := filepath.Join(home, ".BINGO")
	if err := os.Rename(bingo, upper); err != nil {
		t.Fatal(err)
	}
	if got := p.ask("read " + filepath.Join(upper, "secret.txt")); strings.HasPrefix(got, "ok") {
		t.Errorf("read ~/.BINGO/secret.txt = %q, want it hidden", got)
	}
	if got := p.ask("ls " + upper); strings.HasPrefix(got, "ok") {
		t.Errorf("ls ~/.BINGO = %q, want it hidden", got)
	}
	if got := p.ask("ls " + home); !strings.Contains(got, "work") || strings.Contains(got, "BINGO") {
		t.Errorf("ls ~ = %q, want work and no .BINGO", got)
	}
	if got := p.ask("write " + filepath.Join(upper, "planted.json") + " {}"); strings.HasPrefix(got, "ok") {
		t.Errorf("write ~/.BINGO/planted.json = %q, want it refused", got)
	}
	if _, err := os.Stat(filepath.Join(upper, "planted.json")); err == nil {
		t.Errorf("the guest planted a file in ~/.bingo")
	}
}

// The host's /proc, /sys and /dev are not the working directory's data:
// a mount of / hides them (from /proc/self/environ the API key, and
// /proc/self/mem was a write into bingo itself), and none of them, nor a
// directory inside one, is mounted.
func TestHostDirsHidden(t *testing.T) {
	for _, d := range hostDirs {
		if _, err := os.Stat(d); err != nil {
			t.Skipf("%s: %v", d, err)
		}
	}
	t.Setenv("BINGO_WASM_HOST_SECRET", "must-not-leak")
	p := startC(t, sharedHost, Config{Dir: "/", Writable: true})
	for _, path := range []string{"/proc/self/environ", "/proc/self/mem", "/sys/kernel/hostname", "/dev/null", "/PROC/self/environ"} {
		if got := p.ask("read " + path); strings.HasPrefix(got, "ok") {
			t.Errorf("read %s = %.60q, want it hidden", path, got)
		}
		if got := p.ask("write " + path + " x"); strings.HasPrefix(got, "ok") {
			t.Errorf("write %s = %q, want it refused", path, got)
		}
	}
	for _, dir := range []string{"/proc", "/proc/self", "/sys", "/dev"} {
		if got := p.ask("ls " + dir); strings.HasPrefix(got, "ok") {
			t.Errorf("ls %s = %.60q, want it hidden", dir, got)
		}
	}
	got := p.ask("ls /")
	if !strings.HasPrefix(got, "ok") {
		t.Fatalf("ls / = %q", got)
	}
	for _, name := range strings.Fields(strings.TrimPrefix(got, "ok")) {
		if name == "proc" || name == "sys" || name == "dev" {
			t.Errorf("ls / lists %s", name)
		}
	}
	if !strings.Contains(got, " tmp") && !strings.Contains(got, " usr") {
		t.Errorf("ls / = %q, want the rest of /", got)
	}
	// Inside one of them, nothing is mounted.
	for _, dir := range []string{"/proc/self", "/dev"} {
		c, err := sharedHost.Transport(Config{Path: cGuest(t), Name: "cguest", Dir: dir}).Start(t.Context())
		if err == nil {
			_ = c.Kill()
			_ = c.Wait()
		}
		if err == nil || !strings.Contains(err.Error(), "is the host's, never mounted") {
			t.Errorf("a mount of %s: %v, want it refused", dir, err)
		}
	}
}

// Two guests in the home directory with a writable grant: one swaps a
// name between a link into ~/.bingo and a file, the other opens it with
// O_TRUNC and O_CREAT and sets its times. Nothing in ~/.bingo changes:
// an entry of the home directory is opened at the directory's descriptor
// with O_NOFOLLOW, in the one call that acts, and its times are set
// without following a link.
func TestRaceReachesNothingHidden(t *testing.T) {
	home, bingo := home(t)
	secret := filepath.Join(bingo, "secret.txt")
	old := time.Unix(1_000_000_000, 0)
	if err := os.Chtimes(secret, old, old); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: home, Writable: true, Hide: bingo}
	swapper, hammer := startC(t, sharedHost, cfg), startC(t, sharedHost, cfg)
	name := filepath.Join(home, "t")
	for _, guest := range []struct {
		p   *probe
		cmd string
	}{
		{swapper, "swap " + name + " .bingo/secret.txt 3000"},
		{hammer, "hammer " + name + " 3000"},
		{swapper, "swap " + name + " .bingo/new.txt 3000"},
		{hammer, "hammer " + name + " 3000"},
	} {
		if _, err := guest.p.conn.Write([]byte(guest.cmd + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*probe{swapper, hammer, swapper, hammer} {
		if got := p.line(); got != "ok" {
			t.Fatalf("a guest answered %q", got)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Errorf("~/.bingo/secret.txt is %q, %v: truncated through the race", b, err)
	}
	if fi, err := os.Stat(secret); err == nil && !fi.ModTime().Equal(old) {
		t.Errorf("~/.bingo/secret.txt was re-timed to %v through the race", fi.ModTime())
	}
	if _, err := os.Lstat(filepath.Join(bingo, "new.txt")); err == nil {
		t.Errorf("~/.bingo/new.txt was created through the race")
	}
}
