package handlers

import (
	"net/http"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Mail serves email verification and password reset. The mails per
// address are limited in the domain, where every mail is counted (those
// after a signup or a change of email too), by every instance together.
type Mail struct {
	accounts *accounts.Service
}

// mailRequest is POST /v1/email-verifications and /v1/password-resets.
// The domain checks the address (400 naming email when it is not one).
type mailRequest struct {
	Email *string `json:"email" validate:"required"`
}

// confirmEmailRequest is POST /v1/email-verifications/confirm.
type confirmEmailRequest struct {
	Token *string `json:"token" validate:"required,length=1-256"`
}

// confirmResetRequest is POST /v1/password-resets/confirm; the new
// password has the domain's rules.
type confirmResetRequest struct {
	Token       *string `json:"token" validate:"required,length=1-256"`
	NewPassword *string `json:"newPassword" validate:"required"`
}

// request answers a verification or reset request: 202 and no body,
// whether the address is known or not, limited or not. Only a malformed
// address is refused (400), which says nothing about accounts.
func request(w http.ResponseWriter, r *http.Request, ask func(email string) error) error {
	var req mailRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if _, _, fe := domain.NormalizeEmail(*req.Email); fe != nil {
		return domain.InvalidFields(fe)
	}
	if err := ask(*req.Email); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// requestVerification serves POST /v1/email-verifications: mail a new
// verification link to that address's unverified account, if any. A
// session, if sent, is the caller: one of that account spends its own
// mail budget of the address, which nobody else's requests spend.
func (h *Mail) requestVerification(w http.ResponseWriter, r *http.Request) error {
	return request(w, r, func(email string) error {
		return h.accounts.RequestVerification(r.Context(), principal(r.Context()), email)
	})
}

// requestReset serves POST /v1/password-resets: mail a reset link to that
// address's account, if any.
func (h *Mail) requestReset(w http.ResponseWriter, r *http.Request) error {
	return request(w, r, func(email string) error {
		return h.accounts.RequestPasswordReset(r.Context(), email)
	})
}

// confirmEmail serves POST /v1/email-verifications/confirm: the token from
// the mail verifies the address it was sent to.
func (h *Mail) confirmEmail(w http.ResponseWriter, r *http.Request) error {
	var req confirmEmailRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.ConfirmEmail(r.Context(), *req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// confirmReset serves POST /v1/password-resets/confirm: the token from the
// mail sets a new password, ends every session of the account and opens
// one for the caller, answered as a login answers it (201, Session); 204
// when the password is set but the login would refuse the account (a
// suspension), so no session is opened.
func (h *Mail) confirmReset(w http.ResponseWriter, r *http.Request) error {
	var req confirmResetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := h.accounts.ResetPassword(r.Context(), *req.Token, *req.NewPassword, requestClient(r))
	if err != nil {
		return err
	}
	if res.Token == "" && res.Challenge == "" {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	writeSession(w, res)
	return nil
}
