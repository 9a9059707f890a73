package oauth

import "net/http"

// Client is the client h authorizes with, the sdk's requests and
// refreshes alike.
func (h *Handler) Client() *http.Client { return h.o.HTTP }
