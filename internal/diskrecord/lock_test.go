package diskrecord

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A lock taken on a lock file that its previous holder removed meanwhile
// (a pruner removing a past session's) is taken again on the file at the
// path: otherwise it excludes no one, and the next TryLock finds the
// holder gone.
func TestLockOfARemovedFileIsTakenAgain(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd here")
	}
	path := filepath.Join(t.TempDir(), "session")
	unlockFirst, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		unlock, err := Lock(path)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	// Once the second has the file open, its holder removes it and lets go.
	for deadline := time.Now().Add(10 * time.Second); openCount(t, path+".lock") < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second Lock never opened the lock file")
		}
	}
	if err := os.Remove(path + ".lock"); err != nil {
		t.Fatal(err)
	}
	unlockFirst()
	unlock := <-got
	if unlock == nil {
		return
	}
	defer unlock()
	if other, err := TryLock(path); !errors.Is(err, ErrLocked) {
		if other != nil {
			other()
		}
		t.Fatalf("TryLock = %v while the lock is held, want ErrLocked", err)
	}
}

// openCount is how many of this process's descriptors are open on name.
func openCount(t *testing.T, name string) int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", de.Name())); err == nil && (target == name || target == name+" (deleted)") {
			n++
		}
	}
	return n
}
