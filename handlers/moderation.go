package handlers

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Moderation serves suspensions (admins only).
type Moderation struct {
	moderation *moderation.Service
}

// suspendRequest is POST /v1/users/{id}/suspension.
type suspendRequest struct {
	Reason *string      `json:"reason" validate:"required"` // the domain checks it
	Until  *requestTime `json:"until"`
}

// suspensionResponse is the Suspension schema of openapi.yaml.
type suspensionResponse struct {
	UserID      string     `json:"userId"`
	Username    string     `json:"username"`
	Reason      string     `json:"reason"`
	SuspendedAt timestamp  `json:"suspendedAt"`
	SuspendedBy string     `json:"suspendedBy"`
	Until       *timestamp `json:"until,omitempty"`
}

func toSuspensionResponse(s domain.Suspension) suspensionResponse {
	return suspensionResponse{UserID: s.UserID, Username: s.Username, Reason: s.Reason,
		SuspendedAt: stamp(s.SuspendedAt), SuspendedBy: s.SuspendedBy, Until: optionalStamp(s.Until)}
}

// suspend serves POST /v1/users/{id}/suspension (admins).
func (h *Moderation) suspend(w http.ResponseWriter, r *http.Request) error {
	var req suspendRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	s, err := h.moderation.Suspend(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		moderation.SuspendInput{Reason: *req.Reason, Until: (*time.Time)(req.Until)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+s.UserID+"/suspension")
	writeJSON(w, http.StatusCreated, toSuspensionResponse(s))
	return nil
}

// get serves GET /v1/users/{id}/suspension (admins).
func (h *Moderation) get(w http.ResponseWriter, r *http.Request) error {
	s, err := h.moderation.GetSuspension(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSuspensionResponse(s))
	return nil
}

// unsuspend serves DELETE /v1/users/{id}/suspension (admins).
func (h *Moderation) unsuspend(w http.ResponseWriter, r *http.Request) error {
	if err := h.moderation.Unsuspend(r.Context(), principal(r.Context()), chi.URLParam(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// list serves GET /v1/suspensions: the suspended, newest first, paged (admins).
func (h *Moderation) list(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.moderation.ListSuspended(r.Context(), principal(r.Context()), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toSuspensionResponse))
	return nil
}

// moderationEventResponse is the ModerationEvent schema of openapi.yaml.
type moderationEventResponse struct {
	Kind        string     `json:"kind"`
	At          timestamp  `json:"at"`
	Actor       string     `json:"actor,omitempty"`
	Reason      string     `json:"reason"`
	SuspendedAt timestamp  `json:"suspendedAt"`
	Until       *timestamp `json:"until,omitempty"`
}

func toModerationEventResponse(e moderation.Event) moderationEventResponse {
	return moderationEventResponse{Kind: string(e.Kind), At: stamp(e.At), Actor: e.Actor, Reason: e.Reason,
		SuspendedAt: stamp(e.SuspendedAt), Until: optionalStamp(e.Until)}
}

// history serves GET /v1/users/{id}/moderation-history: every suspension,
// unsuspension and expiry of the user, newest first, paged (admins).
func (h *Moderation) history(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.moderation.History(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toModerationEventResponse))
	return nil
}
