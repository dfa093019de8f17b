package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
)

// Moderation serves suspensions (admins only).
type Moderation struct {
	moderation *domain.Moderation
}

// suspendRequest is POST /v1/users/{id}/suspension.
type suspendRequest struct {
	Reason string     `json:"reason" validate:"required,max=2000"`
	Until  *time.Time `json:"until"`
}

// suspensionResponse is the Suspension schema of openapi.yaml.
type suspensionResponse struct {
	UserID      string     `json:"userId"`
	Username    string     `json:"username"`
	Reason      string     `json:"reason"`
	SuspendedAt time.Time  `json:"suspendedAt"`
	SuspendedBy string     `json:"suspendedBy"`
	Until       *time.Time `json:"until,omitempty"`
}

// suspensionList is GET /v1/suspensions.
type suspensionList struct {
	Items      []suspensionResponse `json:"items"`
	NextCursor string               `json:"nextCursor,omitempty"`
}

func toSuspensionResponse(s domain.Suspension) suspensionResponse {
	out := suspensionResponse{UserID: s.UserID, Username: s.Username, Reason: s.Reason,
		SuspendedAt: s.SuspendedAt.UTC(), SuspendedBy: s.SuspendedBy}
	if !s.Until.IsZero() {
		until := s.Until.UTC()
		out.Until = &until
	}
	return out
}

func (h *Moderation) suspend(w http.ResponseWriter, r *http.Request) error {
	var req suspendRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	s, err := h.moderation.Suspend(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		domain.SuspendInput{Reason: req.Reason, Until: req.Until})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+s.UserID+"/suspension")
	writeJSON(w, http.StatusCreated, toSuspensionResponse(s))
	return nil
}

func (h *Moderation) get(w http.ResponseWriter, r *http.Request) error {
	s, err := h.moderation.GetSuspension(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSuspensionResponse(s))
	return nil
}

func (h *Moderation) unsuspend(w http.ResponseWriter, r *http.Request) error {
	if err := h.moderation.Unsuspend(r.Context(), principal(r.Context()), chi.URLParam(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Moderation) list(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	page, err := h.moderation.ListSuspended(r.Context(), principal(r.Context()), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := suspensionList{Items: make([]suspensionResponse, len(page.Items)), NextCursor: page.Next}
	for i, s := range page.Items {
		out.Items[i] = toSuspensionResponse(s)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Paging limits of every list (DESIGN.md, API conventions).
const (
	defaultPageLimit = 20
	maxPageLimit     = 100
)

// pageLimit reads ?limit= (default 20, 1-100).
func pageLimit(r *http.Request) (int, error) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return defaultPageLimit, nil
	}
	raw := q.Get("limit") // present but empty ("?limit=") is not a number either
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxPageLimit {
		return 0, newProblem(http.StatusBadRequest, "validation_failed", "limit must be a whole number from 1 to 100.",
			ProblemField{Field: "limit", Code: "range", Message: "must be a whole number from 1 to 100"})
	}
	return n, nil
}
