package bench

import (
	"context"
	"net/http"
	"testing"
)

// readyzRaw is what /readyz does, straight through the driver: one
// single-row read of the migrations ledger.
func readyzRaw(h *harness) func() error {
	q := h.db.Session.Session.Query(`SELECT done FROM gocqlx_migrate WHERE name = ?`, "001_foundation.cql")
	return func() error {
		var done int
		return q.WithContext(context.Background()).Scan(&done)
	}
}

// BenchmarkReadyz is a single-row read through the whole HTTP stack (router,
// middleware, access log, JSON) beside the same read through gocql.
func BenchmarkReadyz(b *testing.B) {
	h := setup(b)
	url := h.api.base + "/readyz"
	sideBySide(b, h, readyzRaw(h), func() error { return get(url, http.StatusOK) })
}

// BenchmarkReadyzParallel is the same with 16 concurrent callers.
func BenchmarkReadyzParallel(b *testing.B) {
	h := setup(b)
	url := h.api.base + "/readyz"
	sideBySideParallel(b, h, 16, readyzRaw(h), func() error { return get(url, http.StatusOK) })
}
