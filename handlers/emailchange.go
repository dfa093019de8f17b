package handlers

import (
	"net/http"

	"shelf/domain/accounts"
)

// EmailChanges serves the revert link mailed to an account's old address
// when its email is changed, and the "not me" link mailed to the address
// it asks for (docs/design/email-change.md): no session, the link is the
// credential.
type EmailChanges struct {
	accounts *accounts.Service
}

// revertRequest is POST /v1/email-changes/revert and
// /v1/email-changes/refusal: the mailed token.
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

// refuse serves POST /v1/email-changes/refusal: the "not me" token mailed
// to the address a change asks for ends that change, frees the address,
// and keeps the account from asking for it again. It answers nothing of
// the account.
func (h *EmailChanges) refuse(w http.ResponseWriter, r *http.Request) error {
	var req revertRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.RefuseEmailChange(r.Context(), *req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
