package bridge

import (
	"fmt"
	"sync"
)

// MaxDeclaration caps one plugin's declaration, in bytes: its answer to
// initialize is read under a line cap of this size, so the rest of a
// longer one is let go as it arrives and never held, and the handshake
// fails, saying so; a plugin/declare whose params are longer is refused
// before it is decoded. A declaration of a thousand tools with schemas is
// tens of KiB; one of 200,000 tools, which a repository could ship, cost
// the host hundreds of MiB to decode and register.
const MaxDeclaration = 1 << 20

// MaxContributions caps how many contributions of each kind (tools,
// commands, contributors, compactors, providers, hooks, services) one
// declaration offers: past it the rest of that kind are refused, with one
// message.
const MaxContributions = 1024

// DeclarationBudget caps what several plugins' declarations (a project's)
// hold together, in bytes: each plugin's latest declaration counts. A
// declaration that would take the total past the cap is refused. It is
// safe for concurrent use; the zero value is not usable (NewDeclarationBudget).
type DeclarationBudget struct {
	limit int
	what  string // whose plugins, for the refusal: "this project's plugins"

	mu    sync.Mutex
	used  map[string]int
	total int
}

// NewDeclarationBudget returns a budget of limit bytes for the plugins
// what names.
func NewDeclarationBudget(limit int, what string) *DeclarationBudget {
	return &DeclarationBudget{limit: limit, what: what, used: map[string]int{}}
}

// Take records that plugin's declaration is now n bytes, or says why it
// may not be. A nil budget takes anything.
func (b *DeclarationBudget) Take(plugin string, n int) error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	total := b.total - b.used[plugin] + n
	if total > b.limit {
		return fmt.Errorf("its declaration (%s) would take %s past %s of declarations",
			size(n), b.what, size(b.limit))
	}
	b.used[plugin], b.total = n, total
	return nil
}

// size writes n bytes for a person: KiB or MiB, rounded.
func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1<<10-1)>>10)
}
