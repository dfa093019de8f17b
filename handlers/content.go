package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
	"shelf/domain/library"
)

// Contents serves content, sharing and libraries.
type Contents struct {
	contents *library.Service
}

// contentRequest is POST /v1/content and PATCH /v1/content/{id}; the
// domain checks every field (see signupRequest).
type contentRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Visibility  *string `json:"visibility"`
	Link        *string `json:"link"`
}

func (r contentRequest) toInput() library.Input {
	return library.Input{Name: r.Name, Description: r.Description, Visibility: r.Visibility, Link: r.Link}
}

// contentResponse is the Content schema of openapi.yaml.
type contentResponse struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Visibility   string    `json:"visibility"`
	Link         string    `json:"link,omitempty"`
	CreatedBy    string    `json:"createdBy"`
	CreatedAt    timestamp `json:"createdAt"`
	LastModified timestamp `json:"lastModified"`
}

func toContentResponse(c library.Content) contentResponse {
	return contentResponse{ID: c.ID, Name: c.Name, Description: c.Description, Visibility: string(c.Visibility),
		Link: c.Link, CreatedBy: c.CreatedBy, CreatedAt: stamp(c.CreatedAt), LastModified: stamp(c.LastModified)}
}

// shareRequest is PUT /v1/content/{id}/members/{principalId}.
type shareRequest struct {
	Role *string `json:"role" validate:"required"` // the domain checks it
}

// contentMemberResponse is one {principalId, role}.
type contentMemberResponse struct {
	PrincipalID string `json:"principalId"`
	Role        string `json:"role"`
}

// libraryItem is the LibraryItem schema.
type libraryItem struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Visibility   string    `json:"visibility"`
	LastModified timestamp `json:"lastModified"`
}

// create serves POST /v1/content: a new item, its creator its first manager.
func (h *Contents) create(w http.ResponseWriter, r *http.Request) error {
	var req contentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := h.contents.Create(r.Context(), principal(r.Context()), req.toInput())
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/content/"+c.ID)
	writeJSON(w, http.StatusCreated, toContentResponse(c))
	return nil
}

// get serves GET /v1/content/{id}: an item the caller may see.
func (h *Contents) get(w http.ResponseWriter, r *http.Request) error {
	c, err := h.contents.Get(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toContentResponse(c))
	return nil
}

// update serves PATCH /v1/content/{id}: change fields (managers and admins).
func (h *Contents) update(w http.ResponseWriter, r *http.Request) error {
	var req contentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Name == nil && req.Description == nil && req.Visibility == nil && req.Link == nil {
		return newProblem(http.StatusBadRequest, "validation_failed", "Nothing to change: send name, description, visibility or link.",
			ProblemField{Field: "name", Code: "required", Message: "at least one of name, description, visibility, link is required"})
	}
	c, err := h.contents.Update(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), req.toInput())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toContentResponse(c))
	return nil
}

// delete serves DELETE /v1/content/{id}: remove the item from every library.
func (h *Contents) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.contents.Delete(r.Context(), principal(r.Context()), chi.URLParam(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// members serves GET /v1/content/{id}/members: who the item is shared with, paged.
func (h *Contents) members(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.contents.MembersPage(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, memberPageResponse{
		pageResponse: toPage(page.Page, func(m library.Member) contentMemberResponse {
			return contentMemberResponse{PrincipalID: m.PrincipalID, Role: m.Role}
		}),
		MemberCount: page.Members, ManagerCount: page.Managers, YourRole: page.Own})
	return nil
}

// memberPageResponse is the ContentMemberList schema: a page, the item's
// counts and the caller's own role.
type memberPageResponse struct {
	pageResponse[contentMemberResponse]
	MemberCount  int    `json:"memberCount"`
	ManagerCount int    `json:"managerCount"`
	YourRole     string `json:"yourRole,omitempty"`
}

// share serves PUT /v1/content/{id}/members/{principalId}: share with a user or group.
func (h *Contents) share(w http.ResponseWriter, r *http.Request) error {
	var req shareRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	id, principalID := chi.URLParam(r, "id"), chi.URLParam(r, "principalId")
	created, err := h.contents.Share(r.Context(), principal(r.Context()), id, principalID, *req.Role)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, contentMemberResponse{PrincipalID: principalID, Role: *req.Role})
	return nil
}

// unshare serves DELETE /v1/content/{id}/members/{principalId}: take a principal off the item.
func (h *Contents) unshare(w http.ResponseWriter, r *http.Request) error {
	if err := h.contents.Unshare(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "principalId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// userLibrary serves GET /v1/users/{id}/library.
func (h *Contents) userLibrary(w http.ResponseWriter, r *http.Request) error {
	return h.library(w, r, domain.UserIDPrefix)
}

// groupLibrary serves GET /v1/groups/{id}/library.
func (h *Contents) groupLibrary(w http.ResponseWriter, r *http.Request) error {
	return h.library(w, r, domain.GroupIDPrefix)
}

// library serves a library page of the principal the route names (its
// ids begin with prefix: another kind's id is 404, as an unknown one) as
// the caller may see it, newest first or (?order=oldest) oldest first.
func (h *Contents) library(w http.ResponseWriter, r *http.Request, prefix string) error {
	order, cursor, limit, err := libraryParams(r)
	if err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	if !domain.ValidID(id, prefix) {
		return library.ErrLibraryNotFound
	}
	page, err := h.contents.Library(r.Context(), principal(r.Context()), id, order, cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, func(e library.Entry) libraryItem {
		return libraryItem{ID: e.ContentID, Name: e.Name, Visibility: string(e.Visibility), LastModified: stamp(e.LastModified)}
	}))
	return nil
}
