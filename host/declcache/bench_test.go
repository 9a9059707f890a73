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
