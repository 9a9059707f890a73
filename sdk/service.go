package sdk

import (
	"context"
	"encoding/json"
	"errors"
)

// Service answers named methods under a key.
type Service interface {
	Key() string
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrUnavailable is the error of a contribution whose source cannot answer
// now: its process is dead or respawning. Answering with nothing is never
// wrong, so callers treat it as "no contribution".
var ErrUnavailable = errors.New("plugin unavailable")
