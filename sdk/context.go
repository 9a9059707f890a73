package sdk

import "context"

// Query is what a context contributor reads: the serialisable projection of
// the turn about to ask the model, never a handle on the host.
type Query struct {
	Prompt  string `json:"prompt"`
	Cwd     string `json:"cwd"`
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	// Budget is the most characters (Unicode code points, not bytes) the
	// contributor's pieces may add; the host cuts what is over it.
	Budget int `json:"budget"`
}

// Piece is one contribution to the model's context.
type Piece struct {
	Title string `json:"title,omitempty"`
	Text  string `json:"text"`
}

// Contributor adds context before each model request.
type Contributor interface {
	ID() string
	Contribute(ctx context.Context, q Query) ([]Piece, error)
}
