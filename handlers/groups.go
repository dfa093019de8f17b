package handlers

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/lifecycle"
)

// Groups serves groups and their members.
type Groups struct {
	groups *groups.Service
	// lifecycle closes groups and makes managers (with the caller's proof).
	lifecycle *lifecycle.Service
	// grantLimit bounds, per client address, the member changes that
	// carry a password to check (making a manager).
	grantLimit *RateLimiter
}

// createGroupRequest is POST /v1/groups. Only presence is checked here;
// the domain applies each field's rules (see signupRequest).
type createGroupRequest struct {
	Name        *string      `json:"name" validate:"required"`
	DisplayName *string      `json:"displayName"`
	Description *string      `json:"description"`
	MaxMembers  *wholeNumber `json:"maxMembers"` // 2540.0 is an integer too
}

// groupMemberRequest is PUT /v1/groups/{id}/members/{userId}; the domain
// checks the role. Making someone a manager takes the caller's proof, as a
// closing does (deletionRequest's fields).
type groupMemberRequest struct {
	Role            *string              `json:"role" validate:"required"`
	CurrentPassword *string              `json:"currentPassword" validate:"omitempty,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// groupResponse is the Group schema of openapi.yaml.
type groupResponse struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"displayName"`
	Description string    `json:"description"`
	MaxMembers  *int      `json:"maxMembers,omitempty"`
	MemberCount int       `json:"memberCount"`
	CreatedBy   string    `json:"createdBy"`
	CreatedAt   timestamp `json:"createdAt"`
}

// groupMemberResponse is the GroupMember schema of openapi.yaml.
type groupMemberResponse struct {
	PrincipalID string `json:"principalId"`
	Role        string `json:"role"`
}

// groupMembershipResponse is the GroupMembership schema of openapi.yaml.
type groupMembershipResponse struct {
	Group groupResponse `json:"group"`
	Role  string        `json:"role"`
}

func toGroupMembershipResponse(m groups.Membership) groupMembershipResponse {
	return groupMembershipResponse{Group: toGroupResponse(m.Group), Role: m.Role}
}

func toGroupResponse(g groups.Group) groupResponse {
	out := groupResponse{ID: g.ID, Name: g.Name, DisplayName: g.DisplayName, Description: g.Description,
		MemberCount: g.MemberCount, CreatedBy: g.CreatedBy, CreatedAt: stamp(g.CreatedAt)}
	if g.MaxMembers > 0 {
		n := g.MaxMembers
		out.MaxMembers = &n
	}
	return out
}

func toGroupMemberResponse(m groups.Member) groupMemberResponse {
	return groupMemberResponse{PrincipalID: m.UserID, Role: m.Role}
}

// create serves POST /v1/groups: a group with a unique name, the caller its manager.
func (h *Groups) create(w http.ResponseWriter, r *http.Request) error {
	var req createGroupRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	g, err := h.groups.CreateGroup(r.Context(), principal(r.Context()), groups.CreateInput{
		Name: *req.Name, DisplayName: req.DisplayName, Description: req.Description, MaxMembers: req.MaxMembers.intPointer(),
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/groups/"+g.ID)
	writeJSON(w, http.StatusCreated, toGroupResponse(g))
	return nil
}

// get serves GET /v1/groups/{id}.
func (h *Groups) get(w http.ResponseWriter, r *http.Request) error {
	g, err := h.groups.ShowGroup(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toGroupResponse(g))
	return nil
}

// getByName serves GET /v1/groups/by-name/{name}.
func (h *Groups) getByName(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	g, err := h.groups.GetGroupByName(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toGroupResponse(g))
	return nil
}

// listOfUser serves GET /v1/users/{id}/groups: the user's groups, paged by group id.
func (h *Groups) listOfUser(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.groups.ListUserGroups(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toGroupMembershipResponse))
	return nil
}

// listMembers serves GET /v1/groups/{id}/members: the members, paged by user id.
func (h *Groups) listMembers(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.groups.ListMembers(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, toGroupMemberResponse))
	return nil
}

// setMember serves PUT /v1/groups/{id}/members/{userId}: add a member or
// change a role; making someone a manager asks the caller's proof. A
// request carrying a password is limited per client address, as every
// route that checks one is.
func (h *Groups) setMember(w http.ResponseWriter, r *http.Request) error {
	var req groupMemberRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.CurrentPassword != nil {
		if p := h.grantLimit.refusal(r); p != nil {
			return p
		}
	}
	m, added, err := h.lifecycle.SetMember(r.Context(), principal(r.Context()),
		chi.URLParam(r, "id"), chi.URLParam(r, "userId"), *req.Role,
		ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	writeJSON(w, status, toGroupMemberResponse(m))
	return nil
}

// removeMember serves DELETE /v1/groups/{id}/members/{userId}: remove or leave.
func (h *Groups) removeMember(w http.ResponseWriter, r *http.Request) error {
	if err := h.groups.RemoveMember(r.Context(), principal(r.Context()),
		chi.URLParam(r, "id"), chi.URLParam(r, "userId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// close serves DELETE /v1/groups/{id}: closes a group by an admin (a
// manager, who must give the current password, posts a closing; without
// it the domain refuses, naming currentPassword): 202 with the job that
// finishes it (the group is gone for everyone from here), the same job
// for a repeat by whoever closed it or by an admin (to anyone else, 404).
func (h *Groups) close(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	j, err := h.lifecycle.CloseGroup(r.Context(), principal(r.Context()), id, accounts.Proof{})
	if errors.Is(err, lifecycle.ErrClosingProofRequired) {
		// A DELETE carries no body, so the password goes to the request
		// that takes one.
		return newProblem(http.StatusBadRequest, "validation_failed",
			"To close the group as its manager, send your current password to POST /v1/groups/"+id+"/closing (DELETE takes no body).",
			ProblemField{Field: "currentPassword", Code: "required", Message: "is required: send it to POST /v1/groups/{id}/closing"})
	}
	if err != nil {
		return err
	}
	writeJob(w, http.StatusAccepted, j, h.lifecycle.Now())
	return nil
}

// closing serves POST /v1/groups/{id}/closing: the group's closing by a
// manager with the current password (and a factor's proof where the
// account has one), or by an admin; 202 with its job, as close.
func (h *Groups) closing(w http.ResponseWriter, r *http.Request) error {
	var req deletionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	j, err := h.lifecycle.CloseGroup(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	writeJob(w, http.StatusAccepted, j, h.lifecycle.Now())
	return nil
}
