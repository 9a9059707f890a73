package oauth

import (
	"fmt"
	"sync"
	"testing"
)

// Grants saved at once under one name, as two bingo processes do (a login
// beside another's refresh), are all kept: each read, change and write
// holds the file's lock. Without it, one write renames over another's.
func TestConcurrentSavesKeepEveryGrant(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			issuer := fmt.Sprintf("https://as%d.example", i)
			if err := s.update("srv", "https://srv.example/mcp", func(r *record) {
				r.Current = issuer
				r.Issuers[issuer] = &grant{ClientID: issuer}
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	r, err := s.load("srv", "https://srv.example/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Issuers) != n {
		t.Errorf("%d grants kept of %d saved", len(r.Issuers), n)
	}
}
