package handlers

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"shelf/domain/accounts"
)

// Factors serves second factors: authenticator apps and passkeys
// (enrolment and confirmation), the list, removal, recovery codes, a
// passkey's proof challenges, a login's second step, and the revert link
// of a new factor's notice.
type Factors struct {
	accounts *accounts.Service
}

// ownerProof is the owner's proof a request carries: the current
// password and, where the account has a second factor, a code of one, a
// recovery code or a passkey's answer (reauth.go says when each is
// needed). Each request names the four fields itself (an embedded struct
// would name its fields' errors by its type).
func ownerProof(current, code, recoveryCode *string, pk *passkeyProofRequest) accounts.Proof {
	p := accounts.Proof{CurrentPassword: current, Code: deref(code), RecoveryCode: deref(recoveryCode)}
	if pk != nil {
		p.Passkey = &accounts.PasskeyProof{Challenge: deref(pk.Challenge), Answer: answerOf(pk.Credential)}
	}
	return p
}

// credential is a PublicKeyCredential as JSON (credential.toJSON()): an
// object, so that anything else is refused naming its field as the
// decoder refuses a wrong type.
type credential map[string]any

// answerOf is a credential as the bytes go-webauthn parses.
func answerOf(c credential) []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic("handlers: a decoded JSON object does not encode: " + err.Error())
	}
	return b
}

// passkeyProofRequest is a proof's passkey: its answer to a challenge of
// POST /v1/users/{id}/passkey-challenges.
type passkeyProofRequest struct {
	Challenge  *string    `json:"challenge" validate:"required,length=1-256"`
	Credential credential `json:"credential" validate:"required"`
}

// enrolRequest is POST /v1/users/{id}/factors.
type enrolRequest struct {
	Name            *string              `json:"name"`
	CurrentPassword *string              `json:"currentPassword" validate:"required,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// codeRequest is POST /v1/users/{id}/factors/{factorId}/confirmation.
type codeRequest struct {
	Code *string `json:"code" validate:"required,length=1-16"`
}

// factorProofRequest is a removal's or new recovery codes' proof: the
// current password and a code, a recovery code or a passkey's answer (an
// admin removing another's factor sends none).
type factorProofRequest struct {
	CurrentPassword *string              `json:"currentPassword" validate:"omitempty,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// registrationRequest is POST /v1/users/{id}/passkeys/{factorId}/registration.
type registrationRequest struct {
	Credential credential `json:"credential" validate:"required"`
}

// secondFactorRequest is POST /v1/sessions/second-factor.
type secondFactorRequest struct {
	Challenge    *string    `json:"challenge" validate:"required,length=1-256"`
	Code         *string    `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode *string    `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey      credential `json:"passkey"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// factorResponse is the Factor schema of openapi.yaml.
type factorResponse struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Name        string     `json:"name"`
	CreatedAt   timestamp  `json:"createdAt"`
	ConfirmedAt *timestamp `json:"confirmedAt,omitempty"`
	LastUsedAt  *timestamp `json:"lastUsedAt,omitempty"`
}

func toFactorResponse(f accounts.FactorView) factorResponse {
	out := factorResponse{ID: f.ID, Kind: string(f.Kind), Name: f.Name, CreatedAt: stamp(f.CreatedAt)}
	if !f.ConfirmedAt.IsZero() {
		t := stamp(f.ConfirmedAt)
		out.ConfirmedAt = &t
	}
	if !f.LastUsedAt.IsZero() {
		t := stamp(f.LastUsedAt)
		out.LastUsedAt = &t
	}
	return out
}

// enrol serves POST /v1/users/{id}/factors: an authenticator begun, its
// secret shown once (201, TotpEnrolment).
func (h *Factors) enrol(w http.ResponseWriter, r *http.Request) error {
	var req enrolRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	e, err := h.accounts.EnrolTOTP(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), deref(req.Name), ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		Factor     factorResponse `json:"factor"`
		Secret     string         `json:"secret"`
		OtpauthURI string         `json:"otpauthUri"`
		QRCode     string         `json:"qrCode"`
		ExpiresIn  int            `json:"confirmWithinSeconds"`
	}{toFactorResponse(e.Factor), e.Secret.Secret, e.Secret.URI,
		"data:image/png;base64," + base64.StdEncoding.EncodeToString(e.Secret.QRCodePNG), 600})
	return nil
}

// confirm serves POST /v1/users/{id}/factors/{factorId}/confirmation: the
// first code; the account's first factor answers its recovery codes, once.
func (h *Factors) confirm(w http.ResponseWriter, r *http.Request) error {
	var req codeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := h.accounts.ConfirmTOTP(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "factorId"), *req.Code)
	return writeConfirmation(w, c, err)
}

// writeConfirmation answers a factor's confirmation (200,
// TotpConfirmation): the recovery codes of a first factor, once.
func writeConfirmation(w http.ResponseWriter, c accounts.Confirmation, err error) error {
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		Factor        factorResponse `json:"factor"`
		RecoveryCodes []string       `json:"recoveryCodes,omitempty"`
	}{toFactorResponse(c.Factor), c.RecoveryCodes})
	return nil
}

// list serves GET /v1/users/{id}/factors.
func (h *Factors) list(w http.ResponseWriter, r *http.Request) error {
	f, err := h.accounts.ListFactors(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	items := make([]factorResponse, len(f.Factors))
	for i, v := range f.Factors {
		items[i] = toFactorResponse(v)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		Items             []factorResponse `json:"items"`
		RecoveryCodesLeft int              `json:"recoveryCodesLeft"`
	}{items, f.RecoveryCodesLeft})
	return nil
}

// remove serves POST /v1/users/{id}/factors/{factorId}/removal (a body, so
// not a DELETE: see deletionRequest).
func (h *Factors) remove(w http.ResponseWriter, r *http.Request) error {
	var req factorProofRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.RemoveFactor(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "factorId"), ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// recoveryCodes serves POST /v1/users/{id}/recovery-codes: a new set, shown
// once, in place of the old.
func (h *Factors) recoveryCodes(w http.ResponseWriter, r *http.Request) error {
	var req factorProofRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	codes, err := h.accounts.NewRecoveryCodes(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		RecoveryCodes []string `json:"recoveryCodes"`
	}{codes})
	return nil
}

// secondFactor serves POST /v1/sessions/second-factor: a login's
// challenge and a code, a recovery code or a passkey's answer make a
// session (201, Session).
func (h *Factors) secondFactor(w http.ResponseWriter, r *http.Request) error {
	var req secondFactorRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	proof := accounts.Proof{Code: deref(req.Code), RecoveryCode: deref(req.RecoveryCode)}
	if req.Passkey != nil {
		proof.Passkey = &accounts.PasskeyProof{Answer: answerOf(req.Passkey)}
	}
	res, err := h.accounts.SecondFactor(r.Context(), *req.Challenge, proof, requestClient(r))
	if err != nil {
		return err
	}
	writeSession(w, res)
	return nil
}

// loginChallengeResponse is the LoginChallenge schema: a login whose
// password was right, of an account with a second factor.
type loginChallengeResponse struct {
	Challenge string          `json:"challenge"`
	ExpiresAt timestamp       `json:"expiresAt"`
	Methods   []string        `json:"methods"`
	Passkey   json.RawMessage `json:"passkey,omitempty"`
	Next      string          `json:"next"`
}

// writeChallenge answers a login that needs its second step: 202.
func writeChallenge(w http.ResponseWriter, res accounts.LoginResult) {
	w.Header().Set("Cache-Control", "no-store")
	next := "POST /v1/sessions/second-factor with this challenge and a code from your authenticator app (or a recovery code)"
	if res.Passkey != nil {
		next = "POST /v1/sessions/second-factor with this challenge and a code from your authenticator app, " +
			"the answer of navigator.credentials.get(passkey) as passkey, or a recovery code"
	}
	writeJSON(w, http.StatusAccepted, loginChallengeResponse{Challenge: res.Challenge, ExpiresAt: stamp(res.ExpiresAt),
		Methods: res.Methods, Passkey: res.Passkey, Next: next})
}

// revert serves POST /v1/factor-additions/revert: the token from a new
// factor's notice removes it and recovers the account (every session
// ends; the password opens nothing until a reset, whose link is mailed).
func (h *Factors) revert(w http.ResponseWriter, r *http.Request) error {
	var req revertRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := h.accounts.RevertFactor(r.Context(), *req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// passkeyRequest is POST /v1/users/{id}/passkeys.
type passkeyRequest struct {
	Name            *string              `json:"name"`
	CurrentPassword *string              `json:"currentPassword" validate:"required,length=1-1024"`
	Code            *string              `json:"code" validate:"omitempty,length=1-16"`
	RecoveryCode    *string              `json:"recoveryCode" validate:"omitempty,length=1-64"`
	Passkey         *passkeyProofRequest `json:"passkey"`
}

// beginPasskey serves POST /v1/users/{id}/passkeys: a passkey begun, with
// the options for navigator.credentials.create (201, PasskeyEnrolment).
func (h *Factors) beginPasskey(w http.ResponseWriter, r *http.Request) error {
	var req passkeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	e, err := h.accounts.EnrolPasskey(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), deref(req.Name),
		ownerProof(req.CurrentPassword, req.Code, req.RecoveryCode, req.Passkey))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		Factor    factorResponse  `json:"factor"`
		Options   json.RawMessage `json:"options"`
		ExpiresIn int             `json:"confirmWithinSeconds"`
	}{toFactorResponse(e.Factor), e.PasskeyOptions, 600})
	return nil
}

// finishPasskey serves POST /v1/users/{id}/passkeys/{factorId}/registration:
// the browser's answer confirms the passkey (200, TotpConfirmation, as
// an authenticator app's confirmation).
func (h *Factors) finishPasskey(w http.ResponseWriter, r *http.Request) error {
	var req registrationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := h.accounts.ConfirmPasskey(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "factorId"), answerOf(req.Credential))
	return writeConfirmation(w, c, err)
}

// passkeyChallenge serves POST /v1/users/{id}/passkey-challenges: a
// challenge for a passkey to prove the owner (201, PasskeyChallenge).
func (h *Factors) passkeyChallenge(w http.ResponseWriter, r *http.Request) error {
	res, err := h.accounts.ProofChallenge(r.Context(), principal(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, struct {
		Challenge string          `json:"challenge"`
		ExpiresAt timestamp       `json:"expiresAt"`
		Options   json.RawMessage `json:"options"`
	}{res.Challenge, stamp(res.ExpiresAt), res.Passkey})
	return nil
}
