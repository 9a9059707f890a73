package wasm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FuzzWASICalls runs programs of WASI calls, chosen by the fuzzer, in a C
// guest that calls the host's imports directly (testdata/wasicalls), in
// the widest sandbox a person grants (its directory mounted writable),
// and holds the host to the sandbox's promise: each program ends
// (bounded: no call hangs the host), the guest exits 0 (a host function
// that panics traps it), no identity (device and inode) the host reports
// to the guest, of a file or of a directory entry, is of anything outside
// the mount or inside the hidden directory, and nothing there changes.
//
// Its seeds run as a test in make test; docs/design.md ("Fuzzing the
// sandbox") gives the command that fuzzes it for longer.
func FuzzWASICalls(f *testing.F) {
	guest := buildCGuest(f, "testdata/wasicalls/guest.c")
	for _, seed := range wasiSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		runWASIProgram(t, guest, program)
	})
}

// The guest's path pieces (guest.c's pieces) and opcodes that the seeds
// name.
const (
	pDotDot  = 3
	pDot     = 4
	pHidden  = 5
	pHIDDEN  = 6
	pOut     = 7
	pAbs     = 8
	pHid     = 9
	pUp      = 10
	pSecret  = 11
	pAB      = 12
	pNUL     = 15
	pUpUp    = 16
	pNew     = 18
	pLink    = 19
	opOpen   = 0
	opClose  = 1
	opRead   = 2
	opWrite  = 3
	opPread  = 4
	opPwrite = 5
	opReaddr = 7
	opFstat  = 8
	opPstat  = 9
	opMkdir  = 10
	opRename = 13
	opSymlnk = 14
	opLink   = 15
	opReadln = 16
	opRenum  = 17
	opSize   = 18
	opPoll   = 23
	opAlloc  = 24
	opFar    = 29
)

// wasiSeeds are programs that try each way out the issue found held or
// not (docs/design.md): every planted link and spelling of the hidden
// directory opened, listed and statted; files made and grown at offsets;
// renames and links onto the hidden name; a directory listed from odd
// cookies; pointers past memory; and a few random programs.
func wasiSeeds() [][]byte {
	path := func(abs bool, pieces ...byte) []byte {
		b := byte(len(pieces) - 1)
		if abs {
			b |= 4
		}
		return append([]byte{b}, pieces...)
	}
	var seeds [][]byte
	// Open (following links) each way out, then list and stat what the
	// open gave: it is the last descriptor (index 4, the first opened).
	for _, p := range [][]byte{
		path(false, pDotDot), path(false, pHidden), path(false, pHIDDEN), path(false, pOut),
		path(false, pAbs), path(false, pHid), path(false, pUp), path(false, pUpUp),
		path(true, pDotDot), path(true, pHidden), path(false, pOut, pSecret), path(false, pHid, pSecret),
		path(false, pUp, pDotDot, pSecret), path(false, pNUL), path(false, pDot, pHidden),
	} {
		var s []byte
		for _, follow := range []byte{1, 0} {
			s = append(s, opOpen, 0, follow, 0, 0)
			s = append(s, p...)
			s = append(s, 1)
			s = append(s, opPstat, 0, follow)
			s = append(s, p...)
		}
		s = append(s, opReaddr, 4, 0, 40, opFstat, 4, opReadln, 0)
		s = append(s, p...)
		s = append(s, 64)
		seeds = append(seeds, s)
	}
	// Make a file, write it at offsets, grow, shrink and allocate it.
	create := append([]byte{opOpen, 0, 0, 1 | 8, 0}, path(false, pNew)...)
	create = append(create, 1)
	grow := append([]byte{}, create...)
	grow = append(grow, opWrite, 4, 200, opPwrite, 4, 100, 0x45, opPread, 4, 8, 0x45,
		opSize, 4, 0x90, opAlloc, 4, 0x7f, 0x50, opSize, 4, 3, opRead, 4, 2, opClose, 4)
	seeds = append(seeds, grow)
	// Renames, links and symbolic links onto the hidden directory's name.
	onto := append([]byte{}, create...)
	onto = append(onto, opRename, 0)
	onto = append(onto, path(false, pNew)...)
	onto = append(onto, 0)
	onto = append(onto, path(false, pHidden)...)
	onto = append(onto, opSymlnk)
	onto = append(onto, path(false, pHidden)...)
	onto = append(onto, 0)
	onto = append(onto, path(false, pLink)...)
	onto = append(onto, opOpen, 0, 1, 0, 0)
	onto = append(onto, path(false, pLink, pSecret)...)
	onto = append(onto, 1, opLink, 0, 0)
	onto = append(onto, path(false, pHid, pSecret)...)
	onto = append(onto, 0)
	onto = append(onto, path(false, pLink)...)
	onto = append(onto, opMkdir, 0)
	onto = append(onto, path(false, pAB)...)
	onto = append(onto, opRename, 0)
	onto = append(onto, path(false, pHid)...)
	onto = append(onto, 0)
	onto = append(onto, path(false, pNew)...)
	seeds = append(seeds, onto)
	// The mount listed from every kind of cookie, through descriptors
	// renumbered onto each other, then polled.
	list := []byte{opReaddr, 0, 0, 255, opReaddr, 0, 1, 255, opReaddr, 0, 2, 8, opReaddr, 0, 0x90, 8, opReaddr, 0, 0xff, 8}
	list = append(list, opOpen, 0, 1, 2, 0, 0, pDot, 1, opRenum, 4, 0, opReaddr, 0, 0, 255,
		opPoll, 2, 0, 1, 1, 4, opPoll, 3, 2, 1, 3, 0, 0, 0)
	seeds = append(seeds, list)
	// A poll of one descriptor, ready at once (writing to stdout), and no
	// clock: wazero then sleeps for math.MaxInt64 (sleepUntilDone).
	seeds = append(seeds, []byte{opPoll, 0, 2, 2, opPoll, 1, 2, 2, 2, 0})
	// Pointers and lengths past the guest's memory, in every call that
	// takes one.
	var far []byte
	for k := range byte(5) {
		far = append(far, opFar, 0xff, 0xff, k, 0)
	}
	seeds = append(seeds, far)
	r := rand.New(rand.NewPCG(36, 2))
	for range 4 {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// sandboxTree is what one program runs in: work, the mount, holding the
// hidden directory .bingo and links planted toward everything the guest
// must not reach (out and abs to outside, hid to .bingo, up to the mount's
// parent).
type sandboxTree struct {
	root, work, hidden, outside string
}

func plantTree(t *testing.T) sandboxTree {
	t.Helper()
	root := t.TempDir()
	s := sandboxTree{root: root, work: filepath.Join(root, "work"), outside: filepath.Join(root, "outside")}
	s.hidden = filepath.Join(s.work, ".bingo")
	for _, d := range []string{s.work, s.outside, s.hidden, filepath.Join(s.hidden, "plugins"), filepath.Join(s.work, "a")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, data := range map[string]string{
		filepath.Join(s.outside, "secret.txt"):           "outside the mount",
		filepath.Join(s.hidden, "secret.txt"):            "inside the hidden directory",
		filepath.Join(s.hidden, "settings.json"):         `{"permissions": {"deny": ["*"]}}`,
		filepath.Join(s.work, "a", "b"):                  "a file of the mount's",
		filepath.Join(s.work, "c"):                       "another",
		filepath.Join(s.hidden, "plugins", "plugin.txt"): "installed",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"out": "../outside", "abs": s.outside, "hid": ".bingo", "up": ".."} {
		if err := os.Symlink(target, filepath.Join(s.work, name)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// guestID is a file's identity as the host reports it to a guest.
type guestID struct{ dev, ino uint64 }

// outOfReach is every identity the guest must never be told of: the
// mount's ancestors, and everything in outside and in the hidden
// directory.
func (s sandboxTree) outOfReach(t *testing.T) map[guestID]string {
	t.Helper()
	ids := map[guestID]string{}
	add := func(path string) {
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err == nil {
			ids[guestID{uint64(st.Dev), st.Ino}] = path
		}
	}
	for d := filepath.Dir(s.work); ; d = filepath.Dir(d) {
		add(d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, top := range []string{s.outside, s.hidden} {
		_ = filepath.WalkDir(top, func(path string, _ fs.DirEntry, err error) error {
			if err == nil {
				add(path)
			}
			return nil
		})
	}
	return ids
}

// snapshot is what outside, the hidden directory and the mount's parent
// hold: each name, its mode, size, time and content.
func (s sandboxTree) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, top := range []string{s.outside, s.hidden} {
		_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(&b, "%s: %v\n", path, err)
				return nil
			}
			fi, err := os.Lstat(path)
			if err != nil {
				fmt.Fprintf(&b, "%s: %v\n", path, err)
				return nil
			}
			sum := ""
			if fi.Mode().IsRegular() {
				data, _ := os.ReadFile(path)
				sum = fmt.Sprintf("%x", sha256.Sum256(data))
			}
			fmt.Fprintf(&b, "%s %v %d %d %s\n", path, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
			return nil
		})
	}
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		fmt.Fprintf(&b, "root: %s\n", e.Name())
	}
	return b.String()
}

// runWASIProgram runs one program and checks the sandbox held.
func runWASIProgram(t *testing.T, guest string, program []byte) {
	tree := plantTree(t)
	forbidden := tree.outOfReach(t)
	before := tree.snapshot(t)

	c, err := sharedHost.Transport(Config{Path: guest, Name: "wasicalls", Dir: tree.work, Writable: true, Hide: tree.hidden}).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	output := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(c, 16<<20))
		output <- b
	}()
	if _, err := c.Write(program); err != nil {
		t.Fatalf("writing the program: %v", err)
	}
	_ = c.Close() // its stdin: the guest reads the program to its end
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-time.After(60 * time.Second):
		_ = c.Kill()
		select {
		case <-done:
			t.Fatalf("the program ran for over 60s (program %x)", program)
		case <-time.After(10 * time.Second):
			t.Fatalf("the program ran for over 60s and Kill did not end it (program %x)", program)
		}
	}
	out := <-output
	if waitErr != nil && !stdioSetTimes(waitErr) {
		t.Fatalf("the guest did not exit 0: %v (program %x)\n%s", waitErr, program, tail(out))
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "S":
			dev, _ := strconv.ParseUint(f[1], 10, 64)
			ino, _ := strconv.ParseUint(f[2], 10, 64)
			if path, ok := forbidden[guestID{dev, ino}]; ok {
				t.Errorf("the guest was told of %s, out of its reach (%q; program %x)", path, l, program)
			}
		case len(f) == 3 && f[0] == "D" && f[2] == "..":
			// The parent's number, which a guest can do nothing with.
		case len(f) >= 2 && f[0] == "D":
			ino, _ := strconv.ParseUint(f[1], 10, 64)
			for id, path := range forbidden {
				if id.ino == ino && ino != 0 && sameDevice(id.dev, tree.work) {
					t.Errorf("the guest listed %s, out of its reach (%q; program %x)", path, l, program)
				}
			}
		}
	}
	if after := tree.snapshot(t); after != before {
		t.Errorf("outside the mount changed (program %x):\n before: %s\n after: %s", program, before, after)
	}
}

// stdioSetTimes reports whether err is the trap of wazero's own defect in
// fd_filestat_set_times (v1.12.0): on a descriptor of stdio that is not an
// *os.File (here every one), it falls back to the file's FS, which stdio
// has none of, and dereferences nil. wazero recovers the panic and ends
// the guest that called it, which only the guest suffers; anything else
// that ends a guest is the host's failure.
func stdioSetTimes(err error) bool {
	msg := err.Error()
	if u := errors.Unwrap(err); u != nil {
		msg = u.Error() // the trap's whole text: the Wait error keeps its first line
	}
	return strings.Contains(msg, "wasi_snapshot_preview1.fdFilestatSetTimesFn") && strings.Contains(msg, "nil pointer dereference")
}

// sameDevice reports whether dev is the device of path: a directory
// entry's inode is only compared on the mount's own device.
func sameDevice(dev uint64, path string) bool {
	var st syscall.Stat_t
	return syscall.Stat(path, &st) == nil && uint64(st.Dev) == dev
}

// tail is the last lines of the guest's output, for a failure.
func tail(out []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(out))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
