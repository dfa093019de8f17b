package lifecycle

import (
	"context"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
)

// ErrGrantProofRequired answers a grant of the manager role sent without
// the current password.
var ErrGrantProofRequired = domain.Invalid("Give your current password to make someone a manager (and a code where your account has a second factor).",
	domain.FieldError{Field: "currentPassword", Code: "required", Message: "is required to make someone a manager"})

// SetMember adds a user to a group with a role, or changes a member's role,
// as groups.SetMember does; a change that makes someone a manager (an add
// as manager, or a promotion) asks the caller's proof of owning their
// account first (accounts.ProveCaller: the current password, and a
// factor's proof where the account has one), as a closing does. A manager
// may remove every other member and close the group with their own
// password, so a stolen session alone must not make one
// (docs/design/groups.md, "Who may make a manager"). An admin is asked
// too: the role gives no power over groups it does not manage.
func (s *Service) SetMember(ctx context.Context, p domain.Principal, groupID, userID, role string, proof accounts.Proof) (groups.Member, bool, error) {
	return s.groups.SetMember(ctx, p, groupID, userID, role, func(ctx context.Context) error {
		if proof.CurrentPassword == nil || *proof.CurrentPassword == "" {
			return ErrGrantProofRequired
		}
		return s.accounts.ProveCaller(ctx, p, proof)
	})
}
