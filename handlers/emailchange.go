package handlers

import (
	"net/http"

	"shelf/domain/accounts"
)

// EmailChanges serves the revert link mailed to an account's old address
// when its email is changed (docs/design/email-change.md): no session,
// the link is the credential.
type EmailChanges struct {
	accounts *accounts.Service
}

// revertRequest is POST /v1/email-changes/revert.
type revertRequest struct {
	Token *string `json:"token" validate:"required,length=1-256"`
}

// revert serves POST /v1/email-changes/revert: the token from the notice
// cancels the change (or gives the old address back) and ends every
// session of the account.
func (h *EmailChanges) revert(w http.ResponseWriter, r *http.Request) error {
	var req revertRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.RevertEmailChange(r.Context(), *req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
