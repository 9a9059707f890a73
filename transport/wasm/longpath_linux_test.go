package wasm

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A 64 MiB path "a/a/…" is refused with ENAMETOOLONG, in bounded memory
// and time; it cost 2.3–2.7 GB and 5–10 s when it was walked.
func TestLongPathIsRefusedCheaply(t *testing.T) {
	guest := cGuest(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), longPathChildEnv+"="+guest, longPathDirEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	answer, took, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	ns, _ := strconv.ParseInt(took, 10, 64)
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	t.Logf("a %d-byte path: %q in %v, the child's peak RSS %d MiB", longPath, answer, time.Duration(ns), rss>>20)
	if answer != "err 37" { // __WASI_ERRNO_NAMETOOLONG
		t.Errorf("path_open of a %d-byte path = %q, want ENAMETOOLONG (err 37)", longPath, answer)
	}
	// The guest holds the path in its own memory (64 MiB) and wazero
	// copies and cleans it once, byte by byte: the race detector shadows
	// the copy and instruments the loop.
	limit, slow := int64(300<<20), 5*time.Second
	if raceCost > 1 {
		limit, slow = 600<<20, 30*time.Second
	}
	if rss > limit {
		t.Errorf("peak RSS %d MiB, over %d MiB", rss>>20, limit>>20)
	}
	if d := time.Duration(ns); d > slow {
		t.Errorf("the call took %v, over %v", d, slow)
	}
}
