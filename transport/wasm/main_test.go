package wasm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/transport"
)

// Shared by the tests: the probe guest built once, a cache directory it
// was compiled into, and a Host that has compiled it.
var (
	probeWasm  string
	warmCache  string
	sharedHost *Host
	// coldStart is how long the shared Host took from NewHost to the
	// probe's first answer, compiling into the empty warmCache. Measured
	// once: a cold compile is the slowest step of the suite (tens of
	// seconds under -race).
	coldStart time.Duration
	// testTmp is the directory TestMain removes at the end.
	testTmp string
)

func TestMain(m *testing.M) {
	// The test binary is the compile child of the Hosts with a disk
	// cache that the tests make.
	if len(os.Args) > 1 && os.Args[1] == CompileChildArg {
		os.Exit(CompileChild(os.Args[2:], os.Stdin, os.Stderr))
	}
	if mode := os.Getenv(benchChildEnv); mode != "" {
		os.Exit(benchChild(mode))
	}
	if guest := os.Getenv(longPathChildEnv); guest != "" {
		os.Exit(longPathChild(guest))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "wasm-transport-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	testTmp = tmp

	probeWasm = filepath.Join(tmp, "probe.wasm")
	build := exec.Command("go", "build", "-o", probeWasm, "./testdata/probe")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the probe guest: %v\n%s", err, out)
		return 1
	}

	// Compile (and fill warmCache) before any test, so tests that need a
	// warm cache find it whatever their order.
	warmCache = filepath.Join(tmp, "cache")
	ctx := context.Background()
	start := time.Now()
	sharedHost, err = NewHost(ctx, HostConfig{CacheDir: warmCache})
	if err == nil {
		err = firstAnswer(sharedHost)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	coldStart = time.Since(start)

	code := m.Run()
	if err := sharedHost.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "closing the shared host:", err)
		code = 1
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	return code
}

// firstAnswer starts the probe in h, waits for one echo and ends it.
func firstAnswer(h *Host) error {
	c, err := h.Transport(Config{Path: probeWasm, Name: "probe"}).Start(context.Background())
	if err != nil {
		return err
	}
	defer func() {
		_ = c.Kill()
		_ = c.Wait()
	}()
	if _, err := io.WriteString(c, "echo first\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "first\n" {
		return fmt.Errorf("first answer %q, %v", line, err)
	}
	return nil
}

// probe is one running probe instance with a line reader on its stdout.
type probe struct {
	t    testing.TB
	conn transport.Conn
	out  *bufio.Reader
}

// startProbe starts the probe in h with cfg (Path and Name filled in when
// empty) and kills it at the end of the test.
func startProbe(t testing.TB, h *Host, cfg Config) *probe {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = probeWasm
	}
	if cfg.Name == "" {
		cfg.Name = "probe"
	}
	c, err := h.Transport(cfg).Start(context.Background())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		_ = c.Wait()
	})
	return &probe{t: t, conn: c, out: bufio.NewReader(c)}
}

// ask sends one command and returns the answer line. A guest that does not
// answer within the deadline is killed (which unblocks the read) and the
// test fails.
func (p *probe) ask(cmd string) string {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.conn, cmd); err != nil {
		p.t.Fatalf("write %q: %v", cmd, err)
	}
	return p.line()
}

func (p *probe) line() string {
	p.t.Helper()
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := p.out.ReadString('\n')
		ch <- result{s, err}
	}()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatalf("read: %v (partial %q)", r.err, r.s)
		}
		return strings.TrimSuffix(r.s, "\n")
	case <-timer.C:
		_ = p.conn.Kill()
		<-ch
		p.t.Fatal("the guest did not answer within 20s")
	}
	return ""
}

// waitWithin returns Wait's error, failing the test if it takes longer
// than d.
func waitWithin(t testing.TB, c transport.Conn, d time.Duration) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- c.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-ch:
		return err
	case <-timer.C:
		_ = c.Kill()
		<-ch
		t.Fatalf("Wait did not return within %v", d)
	}
	return nil
}
