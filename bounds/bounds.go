package bounds

import "time"

// Deadlines bound every crossing. A zero field takes its default
// (DefaultDeadlines).
type Deadlines struct {
	Initialize  time.Duration
	Tool        time.Duration
	Command     time.Duration
	Complete    time.Duration
	Contributor time.Duration
	Compactor   time.Duration
	// Provider bounds the wait for a stream's first delta, ProviderIdle
	// the silence between deltas (and before the end), ProviderTotal the
	// whole stream, however lively: a stream that never ends is cancelled.
	Provider      time.Duration
	ProviderIdle  time.Duration
	ProviderTotal time.Duration
	Hook          time.Duration
	Service       time.Duration
	// Grace is how long an instance may answer nothing, once a request it
	// owes is past its deadline, before it is declared wedged and killed;
	// and the least time a write to it may block before it counts as not
	// reading its input (see package bridge).
	Grace time.Duration
	// IdleStop stops an instance that has had nothing to do (no request
	// in flight, nothing owed, no request of its own being answered) for
	// this long, quietly: it is no death, and the next read starts it
	// again (see package bridge, "Idle stop").
	IdleStop time.Duration
}

// DefaultDeadlines are the deadlines a zero Deadlines field takes.
func DefaultDeadlines() Deadlines {
	return Deadlines{
		Initialize: 10 * time.Second, Tool: 60 * time.Second, Command: 30 * time.Second,
		Complete: 2 * time.Second, Contributor: 2 * time.Second, Compactor: 30 * time.Second,
		Provider: 60 * time.Second, ProviderIdle: 30 * time.Second, ProviderTotal: 10 * time.Minute,
		Hook: 2 * time.Second, Service: 10 * time.Second, Grace: 5 * time.Second,
		IdleStop: 5 * time.Minute,
	}
}

// WithDefaults returns d with every deadline left zero (or negative) set
// to its default.
func (d Deadlines) WithDefaults() Deadlines {
	def := DefaultDeadlines()
	for _, f := range []struct{ v, def *time.Duration }{
		{&d.Initialize, &def.Initialize}, {&d.Tool, &def.Tool}, {&d.Command, &def.Command},
		{&d.Complete, &def.Complete}, {&d.Contributor, &def.Contributor}, {&d.Compactor, &def.Compactor},
		{&d.Provider, &def.Provider}, {&d.ProviderIdle, &def.ProviderIdle}, {&d.ProviderTotal, &def.ProviderTotal},
		{&d.Hook, &def.Hook}, {&d.Service, &def.Service}, {&d.Grace, &def.Grace}, {&d.IdleStop, &def.IdleStop},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return d
}

// Limits bound what one crossing may make the host hold. A zero field
// takes its default (DefaultLimits).
type Limits struct {
	// ProviderResponseMiB caps one provider response: the deltas of one
	// stream, counted as they cross the wire. Past it the stream is
	// cancelled and fails (bridge.TooLargeError).
	ProviderResponseMiB int
}

// DefaultLimits are the limits a zero Limits field takes: 32 MiB is
// hundreds of times a long model answer, and little for the host to hold.
func DefaultLimits() Limits { return Limits{ProviderResponseMiB: 32} }

// WithDefaults returns l with every limit left zero (or negative) set to
// its default.
func (l Limits) WithDefaults() Limits {
	if l.ProviderResponseMiB <= 0 {
		l.ProviderResponseMiB = DefaultLimits().ProviderResponseMiB
	}
	return l
}
