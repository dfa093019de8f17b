package handlers

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// Users serves accounts: signup, reads, changes, password.
type Users struct {
	accounts *accounts.Service
	// lifecycle deletes accounts.
	lifecycle *lifecycle.Service
}

// signupRequest is POST /v1/users. Only presence is checked here: the
// domain applies each field's rules, with one code per rule whatever the
// input's length (a transport bound here would answer a long value with
// another code than a short one; the body limit bounds the work).
type signupRequest struct {
	Username    *string `json:"username" validate:"required"`
	Email       *string `json:"email" validate:"required"`
	Password    *string `json:"password" validate:"required"`
	DisplayName *string `json:"displayName"`
}

// updateUserRequest is PATCH /v1/users/{id}: absent fields stay as they
// are; the domain checks the others (see signupRequest).
// currentPassword is the owner's proof for a new username or email: the
// domain says when it is needed (reauth.go).
type updateUserRequest struct {
	DisplayName     *string              `json:"displayName"`
	Username        *string              `json:"username"`
	Email           *string              `json:"email"`
	CurrentPassword *string              `json:"currentPassword" validate:"omitempty,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// deletionRequest is POST /v1/users/{id}/deletion: the owner's current
// password (an admin deleting another account sends none). A body, so
// not on DELETE (which generated clients send without one, and whose
// body openapi-generator warns about); a password, so not in a header
// (browsers refuse header values beyond Latin-1).
type deletionRequest struct {
	CurrentPassword *string              `json:"currentPassword" validate:"omitempty,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// passwordRequest is PUT /v1/users/{id}/password. The current password has
// no rule but the transport's; the new one has the domain's.
type passwordRequest struct {
	CurrentPassword *string              `json:"currentPassword" validate:"required,length=1-1024"`
	NewPassword     *string              `json:"newPassword" validate:"required"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// userResponse is the User schema of openapi.yaml.
type userResponse struct {
	ID          string `json:"id"`
	Username    string `json:"username"`
	DisplayName string `json:"displayName"`
	Email       string `json:"email,omitempty"`
	Status      string `json:"status,omitempty"`
	// Roles are shown with the email (the user and admins; nil is left
	// out, an empty list is not): who the admins are is not for everyone
	// who can read an account.
	Roles     []string  `json:"roles,omitzero"`
	CreatedAt timestamp `json:"createdAt"`
	// EmailVerified is shown with the email (the user and admins).
	EmailVerified *bool `json:"emailVerified,omitempty"`
	// PendingEmail is a new address asked for and not verified yet,
	// shown with the email.
	PendingEmail string `json:"pendingEmail,omitempty"`
	// HeldUsername and HeldUsernameUntil are the username the owner left
	// and the account holds, in the answer of a change.
	HeldUsername      string     `json:"heldUsername,omitempty"`
	HeldUsernameUntil *timestamp `json:"heldUsernameUntil,omitempty"`
}

func toUserResponse(v accounts.UserView) userResponse {
	u := v.User
	out := userResponse{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, CreatedAt: stamp(u.CreatedAt)}
	if v.Full {
		out.Roles = u.Roles
		if out.Roles == nil {
			out.Roles = []string{}
		}
		out.Email, out.Status = u.Email, string(u.Status)
		verified := !u.EmailVerifiedAt.IsZero()
		out.EmailVerified = &verified
		out.PendingEmail = u.PendingEmail
		if u.HeldUsername != "" {
			out.HeldUsername = u.HeldUsername
			if !u.HeldUsernameUntil.IsZero() { // none while a suspension without an end stands
				until := stamp(u.HeldUsernameUntil)
				out.HeldUsernameUntil = &until
			}
		}
	}
	return out
}

// signup serves POST /v1/users: a new account.
func (h *Users) signup(w http.ResponseWriter, r *http.Request) error {
	var req signupRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	in := accounts.SignupInput{Username: *req.Username, Email: *req.Email, Password: *req.Password,
		DisplayName: req.DisplayName}
	u, err := h.accounts.Signup(r.Context(), in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/users/"+u.ID)
	writeJSON(w, http.StatusCreated, toUserResponse(accounts.UserView{User: u.Shown(), Full: true}))
	return nil
}

// get serves GET /v1/users/{id}.
func (h *Users) get(w http.ResponseWriter, r *http.Request) error {
	v, err := h.accounts.GetUser(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUserResponse(v))
	return nil
}

// getByUsername serves GET /v1/users/by-username/{username}.
func (h *Users) getByUsername(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "username")
	v, err := h.accounts.GetByUsername(r.Context(), principal(r.Context()), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUserResponse(v))
	return nil
}

// getByEmail serves GET /v1/users/by-email/{email} (admins).
func (h *Users) getByEmail(w http.ResponseWriter, r *http.Request) error {
	email := chi.URLParam(r, "email")
	v, err := h.accounts.GetByEmail(r.Context(), principal(r.Context()), email)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUserResponse(v))
	return nil
}

// search serves GET /v1/users?q=: the visible accounts whose username or
// email holds q, paged (admins; docs/design/user-search.md). q is required
// and given once; the domain checks its form.
func (h *Users) search(w http.ResponseWriter, r *http.Request) error {
	query, err := listQuery(r, "cursor", "limit", "q")
	if err != nil {
		return err
	}
	cursor, limit, err := pageOf(query)
	if err != nil {
		return err
	}
	if !query.Has("q") {
		return newProblem(http.StatusBadRequest, "validation_failed", "q is required: part of a username or email.",
			ProblemField{Field: "q", Code: "required", Message: "is required"})
	}
	page, err := h.accounts.SearchUsers(r.Context(), principal(r.Context()), query.Get("q"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, func(u domain.User) userResponse {
		return toUserResponse(accounts.UserView{User: u.Shown(), Full: true})
	}))
	return nil
}

// people serves GET /v1/people?prefix=: the accounts whose username starts
// with prefix, their public part, paged (any session;
// docs/design/people-search.md). prefix is required and given once; the
// domain checks its form.
func (h *Users) people(w http.ResponseWriter, r *http.Request) error {
	query, err := listQuery(r, "cursor", "limit", "prefix")
	if err != nil {
		return err
	}
	cursor, limit, err := pageOf(query)
	if err != nil {
		return err
	}
	if !query.Has("prefix") {
		return newProblem(http.StatusBadRequest, "validation_failed", "prefix is required: the first characters of a username.",
			ProblemField{Field: "prefix", Code: "required", Message: "is required"})
	}
	page, err := h.accounts.SearchPeople(r.Context(), principal(r.Context()), query.Get("prefix"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPage(page, func(p domain.Profile) userResponse {
		return toUserResponse(accounts.UserView{User: domain.Shown{ID: p.ID, Username: p.Username, DisplayName: p.DisplayName, CreatedAt: p.CreatedAt}})
	}))
	return nil
}

// update serves PATCH /v1/users/{id}: display name, username or email.
func (h *Users) update(w http.ResponseWriter, r *http.Request) error {
	var req updateUserRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.DisplayName == nil && req.Username == nil && req.Email == nil {
		return newProblem(http.StatusBadRequest, "validation_failed", "Nothing to change: send displayName, username or email.",
			ProblemField{Field: "displayName", Code: "required", Message: "at least one of displayName, username, email is required"})
	}
	v, err := h.accounts.UpdateUser(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		accounts.UpdateInput{DisplayName: req.DisplayName, Username: req.Username, Email: req.Email,
			Proof: ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUserResponse(v))
	return nil
}

// changePassword serves PUT /v1/users/{id}/password.
func (h *Users) changePassword(w http.ResponseWriter, r *http.Request) error {
	var req passwordRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.ChangePassword(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey), *req.NewPassword); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// remove serves DELETE /v1/users/{id}: the account's deletion by an
// admin (the user, who must give the current password, posts a deletion;
// without it the domain refuses, naming currentPassword). 202 with the
// job that finishes it (the account is gone for everyone from here), the
// same job for a repeat.
func (h *Users) remove(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	j, err := h.lifecycle.DeleteUser(r.Context(), principal(r.Context()), id, accounts.Proof{})
	if errors.Is(err, accounts.ErrCurrentPasswordRequired) {
		// The user's own request: a DELETE carries no body, so the
		// password goes to the request that takes one.
		return newProblem(http.StatusBadRequest, "validation_failed",
			"To delete your own account, send your current password to POST /v1/users/"+id+"/deletion (DELETE takes no body).",
			ProblemField{Field: "currentPassword", Code: "required", Message: "is required: send it to POST /v1/users/{id}/deletion"})
	}
	if err != nil {
		return err
	}
	writeJob(w, http.StatusAccepted, j, h.lifecycle.Now())
	return nil
}

// deletion serves POST /v1/users/{id}/deletion: the account's deletion,
// by the user with the current password or by an admin; 202 with its job,
// as remove.
func (h *Users) deletion(w http.ResponseWriter, r *http.Request) error {
	var req deletionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	j, err := h.lifecycle.DeleteUser(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	writeJob(w, http.StatusAccepted, j, h.lifecycle.Now())
	return nil
}

// me serves GET /v1/me: the caller's own account.
func (h *Users) me(w http.ResponseWriter, r *http.Request) error {
	u, err := h.accounts.Me(r.Context(), principal(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toUserResponse(accounts.UserView{User: u, Full: true}))
	return nil
}
