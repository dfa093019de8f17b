package handlers

import (
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Audit serves the audit of admin actions on accounts.
type Audit struct{ accounts *accounts.Service }

// auditEntryResponse is the AuditEntry schema of openapi.yaml.
type auditEntryResponse struct {
	ID        string     `json:"id"`
	UserID    string     `json:"userId"`
	Action    string     `json:"action"`
	At        timestamp  `json:"at"`
	Actor     string     `json:"actor,omitempty"`
	Via       string     `json:"via"`
	ClientIP  string     `json:"clientIp,omitempty"`
	UserAgent string     `json:"userAgent,omitempty"`
	SessionID string     `json:"sessionId,omitempty"`
	Old       string     `json:"old,omitempty"`
	New       string     `json:"new,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Until     *timestamp `json:"until,omitempty"`
}

func toAuditEntryResponse(e domain.AuditEntry) auditEntryResponse {
	return auditEntryResponse{ID: e.ID(), UserID: e.UserID, Action: string(e.Action), At: stamp(e.At), Actor: e.Actor, Via: e.Via,
		ClientIP: e.From.IP, UserAgent: e.From.UserAgent, SessionID: e.From.Session, Old: e.Old, New: e.New, Reason: e.Reason, Until: optionalStamp(e.Until)}
}

// list serves GET /v1/users/{id}/audit: the admin actions on the account,
// newest first, paged (admins).
func (h *Audit) list(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.accounts.Audit(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toAuditEntryResponse))
	return nil
}

// all serves GET /v1/audit: every account's audit, newest first, paged,
// filtered by ?actor= and ?action= (admins).
func (h *Audit) all(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r, "cursor", "limit", "actor", "action")
	if err != nil {
		return err
	}
	cursor, limit, err := pageOf(q)
	if err != nil {
		return err
	}
	var f accounts.AuditFilter
	if q.Has("actor") {
		if f.Actor = q.Get("actor"); !domain.ValidID(f.Actor, domain.UserIDPrefix) {
			return newProblem(http.StatusBadRequest, "validation_failed", "actor must be a user's id (u_...).",
				ProblemField{Field: "actor", Code: "format", Message: "must be a user's id (u_...)"})
		}
	}
	if q.Has("action") {
		if f.Action = domain.AuditAction(q.Get("action")); !slices.Contains(domain.AuditActions, f.Action) {
			return newProblem(http.StatusBadRequest, "validation_failed", "action must be one of the audit's actions.",
				ProblemField{Field: "action", Code: "enum", Message: "must be one of the AuditAction values"})
		}
	}
	page, err := h.accounts.AllAudit(r.Context(), principal(r.Context()), f, cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toAuditEntryResponse))
	return nil
}

// origin is where r came from, for the audit of what its caller does:
// the client address frame worked out and the user agent.
func origin(r *http.Request) domain.Origin {
	return domain.OriginOf(ipText(ClientIP(r.Context())), r.UserAgent())
}
