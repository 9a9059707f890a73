package declcache

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host/trust"
)

// BenchmarkLookup looks up a hit in a file of one entry, and in a full file
// (keep entries, the hit among them), of a declaration of about 16 KiB.
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, keep} {
		b.Run(fmt.Sprint("entries=", n), func(b *testing.B) {
			dir := b.TempDir()
			c := New(filepath.Join(dir, "cache"), trust.NewSums())
			m := plugin(b, dir, "p", "print(1)")
			d := decl("p")
			d.Version = strings.Repeat("x", 16<<10)
			for i := range n {
				k, _, _ := c.Lookup(m, Start{Dir: fmt.Sprint("/d", i)})
				if err := c.Store(k, d, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, hit, _ := c.Lookup(m, Start{Dir: "/d0"}); hit == nil {
					b.Fatal("miss")
				}
			}
		})
	}
}

// BenchmarkPrune prunes a cache holding the files of 10 plugins the run
// did not find but whose files are there (another project's), each a
// full file of declarations of about 16 KiB: what each host Open pays for
// them, next to BenchmarkLookup's one hit.
func BenchmarkPrune(b *testing.B) {
	dir := b.TempDir()
	c := New(filepath.Join(dir, "cache"), trust.NewSums())
	d := decl("p")
	d.Version = strings.Repeat("x", 16<<10)
	for i := range 10 {
		m := plugin(b, dir, fmt.Sprint("p", i), "print(1)")
		for j := range keep {
			k := Key{name: m.Name, digest: fmt.Sprint("k", j), files: []trust.FileSum{{Path: m.File, Version: "1", SHA256: "ff", Settled: true}}}
			if err := c.Store(k, d, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if removed := c.Prune(func(string) bool { return false }); len(removed) != 0 {
			b.Fatalf("removed %q", removed)
		}
	}
}
