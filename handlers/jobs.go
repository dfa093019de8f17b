package handlers

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"shelf/domain/jobs"
	"shelf/domain/lifecycle"
)

// Jobs serves the jobs that finish what a request began: an account's
// deletion, a group's closing, a library's rebuild (docs/design/jobs.md).
type Jobs struct {
	lifecycle *lifecycle.Service
}

// jobBody is a job as the API shows it (openapi.yaml's Job).
type jobBody struct {
	ID         string     `json:"id"`
	Kind       jobs.Kind  `json:"kind"`
	Subject    string     `json:"subject"`
	State      jobs.State `json:"state"`
	Phase      string     `json:"phase"`
	Done       int        `json:"done"`
	Total      int        `json:"total"`
	Left       int        `json:"left"`
	Runs       int        `json:"runs"`
	Retrying   bool       `json:"retrying"`
	CreatedAt  timestamp  `json:"createdAt"`
	UpdatedAt  timestamp  `json:"updatedAt"`
	FinishedAt *timestamp `json:"finishedAt,omitempty"`
}

func toJobBody(j jobs.Job, now time.Time) jobBody {
	updated := j.UpdatedAt
	if updated.IsZero() {
		updated = j.CreatedAt
	}
	return jobBody{ID: j.ID, Kind: j.Kind, Subject: j.Subject, State: j.State(now), Phase: j.Phase,
		Done: j.Done, Total: j.Total, Left: j.Left(), Runs: j.Runs, Retrying: j.Retrying(), CreatedAt: stamp(j.CreatedAt),
		UpdatedAt: stamp(updated), FinishedAt: optionalStamp(j.FinishedAt)}
}

// jobPollSeconds is the Retry-After of an answer naming a job under way:
// how soon it is worth asking again.
const jobPollSeconds = "1"

// writeJob answers status with the job, where to follow it (Location),
// and, while it is under way, when to ask again (Retry-After).
func writeJob(w http.ResponseWriter, status int, j jobs.Job, now time.Time) {
	body := toJobBody(j, now)
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	if body.State != jobs.Finished {
		w.Header().Set("Retry-After", jobPollSeconds)
	}
	writeJSON(w, status, body)
}

// rebuild serves POST /v1/admin/libraries/{principalId}/rebuild (admins):
// 202 with the job that rebuilds the library.
func (h *Jobs) rebuild(w http.ResponseWriter, r *http.Request) error {
	j, err := h.lifecycle.RebuildLibrary(r.Context(), principal(r.Context()), chi.URLParam(r, "principalId"))
	if err != nil {
		return err
	}
	writeJob(w, http.StatusAccepted, j, h.lifecycle.Now())
	return nil
}

// get serves GET /v1/jobs/{id}: whoever holds the id (a deletion's or a
// closing's answer named it) may follow the job, with or without a
// session: the account a deletion ends has none left.
func (h *Jobs) get(w http.ResponseWriter, r *http.Request) error {
	j, err := h.lifecycle.Job(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJob(w, http.StatusOK, j, h.lifecycle.Now())
	return nil
}
