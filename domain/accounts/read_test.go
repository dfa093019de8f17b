package accounts

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
)

// accessOf answers Access with its account or its error; nothing else of
// UserStore is called.
type accessOf struct {
	UserStore
	a   domain.Access
	err error
}

func (s accessOf) Access(context.Context, string) (domain.Access, error) { return s.a, s.err }

// TestRequireAdminTellsARefusalFromAFailedRead: under RequireAdminFactor,
// a session made with a password alone is refused admin powers (403
// admin_factor_required for an admin, 403 forbidden for anyone else), but
// a read of the account that failed is passed on as it failed (a 503),
// never answered as a refusal; with a second factor an admin passes.
func TestRequireAdminTellsARefusalFromAFailedRead(t *testing.T) {
	t.Parallel()
	admin := domain.Access{ID: "u_admin", Roles: []string{domain.RoleAdmin}, Status: domain.StatusActive}
	password := domain.Principal{UserID: admin.ID, Session: domain.Session{MadeWith: []string{domain.MadePassword}}}
	down := errors.New("the database does not answer")
	for _, c := range []struct {
		name  string
		store accessOf
		p     domain.Principal
		want  error
	}{
		{"an admin, a password alone", accessOf{a: admin}, password, ErrAdminFactorRequired},
		{"a user, a password alone", accessOf{a: domain.Access{ID: admin.ID, Status: domain.StatusActive}}, password, domain.ErrDenied},
		{"the read failed", accessOf{err: down}, password, down},
		{"an admin with a passkey", accessOf{a: admin}, domain.Principal{UserID: admin.ID,
			Session: domain.Session{MadeWith: []string{domain.MadePassword, domain.MadePasskey}}}, nil},
	} {
		a := New(Config{RequireAdminFactor: true}, nil, c.store, nil, nil, nil)
		if _, err := a.RequireAdmin(context.Background(), c.p); !errors.Is(err, c.want) && (c.want != nil || err != nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
