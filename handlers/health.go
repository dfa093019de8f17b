package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"shelf/domain"
)

// ReadyChecker says whether the service can serve requests: nil, or an error
// saying why not.
type ReadyChecker interface {
	CheckReady(ctx context.Context) error
}

// readyTimeout keeps /readyz quick when Cassandra hangs: probes have short
// timeouts of their own.
const readyTimeout = 2 * time.Second

// Health serves the liveness and readiness probes.
type Health struct {
	ready ReadyChecker
}

// healthStatus is the body of a healthy probe.
type healthStatus struct {
	Status string `json:"status"`
}

// live serves GET /healthz: 200 while the process runs; it touches no dependency.
func (h *Health) live(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, healthStatus{Status: "ok"})
}

// readyz serves GET /readyz: 200 when Cassandra answers and the schema is current, and
// 503 with the reason otherwise. It recovers by itself: every call checks
// again.
func (h *Health) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := h.ready.CheckReady(ctx); err != nil {
		requestLog(r).Warn().Err(err).Msg("not ready")
		if errors.Is(err, domain.ErrSchemaBehind) {
			// The log has the details; the answer says what to do.
			return newProblem(http.StatusServiceUnavailable, "schema_behind",
				"The database schema is older than this release; run `api migrate`.")
		}
		return newProblem(http.StatusServiceUnavailable, "database_unavailable", "Cassandra does not answer.")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, healthStatus{Status: "ready"})
	return nil
}
