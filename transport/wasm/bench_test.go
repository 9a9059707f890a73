package wasm

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkRoundTrip is one line through a running guest and back: the
// transport's share of every call.
func BenchmarkRoundTrip(b *testing.B) {
	p := startProbe(b, sharedHost, Config{})
	line := []byte("echo {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
	r := bufio.NewReader(p.conn)
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.conn.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartCold is a new Host compiling the probe (empty cache dir)
// up to its first answer: a plugin's first start on a new machine.
func BenchmarkStartCold(b *testing.B) {
	for b.Loop() {
		benchFirstAnswer(b, filepath.Join(b.TempDir(), "cache")) // a new, empty dir each time
	}
}

// BenchmarkStartWarm is a new Host loading the probe from a populated disk
// cache up to its first answer: a plugin's first start in a new session.
func BenchmarkStartWarm(b *testing.B) {
	for b.Loop() {
		benchFirstAnswer(b, warmCache)
	}
}

func benchFirstAnswer(b *testing.B, cacheDir string) {
	ctx := context.Background()
	h, err := NewHost(ctx, HostConfig{CacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	c, err := h.Transport(Config{Path: probeWasm, Name: "probe"}).Start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.WriteString(c, "echo first\n"); err != nil {
		b.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	_ = c.Close()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
}
