package accounts

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"shelf/domain"
)

// UpdateInput is a change of account; nil fields stay as they are.
type UpdateInput struct {
	DisplayName *string
	Username    *string
	Email       *string
	// Proof is the owner's for a change of username or email (reauth.go):
	// the current password, and a code, a recovery code or a passkey's
	// answer where the account has a second factor; an admin acting on
	// another account sends none.
	Proof Proof
}

// accountChange is a checked UpdateInput: its values normalized.
type accountChange struct {
	in                                              UpdateInput
	username, usernameKey, email, emailKey, display string
}

// checkUpdate normalizes every field of in, or names every field at fault.
func checkUpdate(in UpdateInput) (accountChange, error) {
	c := accountChange{in: in}
	var fes []*domain.FieldError
	if in.Username != nil {
		var fe *domain.FieldError
		c.username, c.usernameKey, fe = domain.NormalizeUsername(*in.Username)
		fes = append(fes, fe)
	}
	if in.Email != nil {
		var fe *domain.FieldError
		c.email, c.emailKey, fe = domain.NormalizeEmail(*in.Email)
		fes = append(fes, fe)
	}
	if in.DisplayName != nil {
		var fe *domain.FieldError
		c.display, fe = domain.NormalizeDisplayName(*in.DisplayName)
		fes = append(fes, fe)
	}
	return c, domain.InvalidFields(fes...)
}

// credentials reports whether the change touches what takes u: its
// username or its email, as written (a change of case included).
func (c accountChange) credentials(u domain.User) bool {
	return (c.in.Username != nil && c.username != u.Username) || (c.in.Email != nil && c.email != u.Email)
}

// cancels reports whether the change drops the new address u asked for
// and still holds (its own address sent again: apply).
func (c accountChange) cancels(u domain.User, h holds) bool {
	return c.in.Email != nil && !c.asksEmail(u) && h.pending(u)
}

// asksEmail reports whether the change asks for a new address for u: one
// whose key is not u's own (a new spelling of the same address is not).
func (c accountChange) asksEmail(u domain.User) bool {
	return c.in.Email != nil && c.emailKey != u.EmailKey
}

// respells reports whether the change writes u's own address, or the
// address it holds for a revert link (the row names it), with other
// letters, not only in another letter case: ß for ss, ς for σ fold to
// one key (U1), yet may name another mailbox, or another domain (faß.de
// is not fass.de). Its own address so written would be taken with no
// notice and no link followed, and every mail of the account would go
// there; the held one so written would be a change back confirmed by
// that spelling's reader, ending the hold, and the revert link of the
// key would then mail its reset link to that spelling
// (ErrOtherSpelling).
func (c accountChange) respells(u domain.User) bool {
	if c.in.Email == nil {
		return false
	}
	for _, own := range [][2]string{{u.EmailKey, u.Email}, {u.RecoveryEmailKey, u.RecoveryEmail}} {
		if own[0] != "" && c.emailKey == own[0] && !sameLetters(c.email, own[1]) {
			return true
		}
	}
	return false
}

// sameLetters reports whether two spellings of one email key differ in
// letter case at most, letter by letter: two letters are one when they
// have one lower case and one upper case (unicode.ToLower and
// unicode.ToUpper), a pair of cases both ways. Only then does mail to one
// go where mail to the other goes (respells). Not simple case folding
// (strings.EqualFold): that takes ς for σ (both kept by NFKC), which
// IDNA2008 keeps apart, so ας.example.org is another domain than
// ασ.example.org (TestLettersOfOneKeyAreAnotherSpellingOfTheAddress). Nor
// lower case alone: ẞ lowers to ß, whose upper case is ß itself, and IDNA
// maps ẞ to ss and keeps ß, so graẞ.example.org is grass.example.org
// (the same test).
func sameLetters(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if unicode.ToLower(ra) != unicode.ToLower(rb) || unicode.ToUpper(ra) != unicode.ToUpper(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// ErrOtherSpelling refuses the account's own address, or the one it
// holds for a revert, written with other letters (respells): only its
// letter case may change; any other address is asked for and confirmed
// by its link.
var ErrOtherSpelling = domain.Invalid("The new email is an address of this account written with other letters, which may reach another mailbox; keep its spelling or change only its letter case.",
	domain.FieldError{Field: "email", Code: "other_spelling",
		Message: "is an address of the account (its own, or the one held for its revert link) written with other letters (such as ß for ss, ς for σ), which may reach another mailbox; only its letter case may change"})

// apply returns u with the change made, then its ended holds dropped
// (holds.live: an address held stays named while a change asks for it
// back), and the new keys it must claim (the username before the email,
// the order of every claimant: see domain.Claimer.AcquireAll). A new
// address is only asked for (pending), by session (a public session id,
// "" for an admin): the account keeps its own until the new one is
// verified; the address itself, or its new spelling, cancels a change
// pending. The owner's rename holds the name it leaves for h.nameFor,
// unless the hold of an earlier rename lasts: the first name left stays
// held, so a second rename by a thief cannot free it, and the name the
// second leaves is free at once. An admin's rename holds nothing: a name
// an admin took away is not the user's to take back.
func (c accountChange) apply(u domain.User, h holds, self bool, session string) (next domain.User, claim []domain.Key) {
	next = u
	now := h.now
	if c.in.Username != nil {
		next.Username, next.UsernameKey = c.username, c.usernameKey
		switch {
		case c.usernameKey == u.UsernameKey:
			// A new spelling of its own name.
		case h.key(u, domain.KindUsername, c.usernameKey):
			// Back to the name held: it claims nothing (the row that
			// read the hold alive is fenced before anyone takes the
			// name over) and holds nothing in turn.
			next.HeldUsername, next.HeldUsernameKey, next.HeldUsernameUntil = "", "", time.Time{}
		default:
			claim = append(claim, domain.Key{Kind: domain.KindUsername, Key: c.usernameKey, Field: "username"})
			if self && !h.heldName(u) {
				next.HeldUsername, next.HeldUsernameKey, next.HeldUsernameUntil = u.Username, u.UsernameKey, now.Add(h.nameFor)
			}
		}
	}
	switch {
	case c.in.Email == nil:
	case !c.asksEmail(u):
		next.Email = c.email
		next.PendingEmail, next.PendingEmailKey, next.PendingEmailAt, next.PendingEmailSession = "", "", time.Time{}, ""
	default:
		next.PendingEmail, next.PendingEmailKey, next.PendingEmailAt, next.PendingEmailSession = c.email, c.emailKey, now, session
		// A key held only by a hold that has ended is claimed like any
		// new key: the claimer fences the row before it takes it over.
		if !h.key(u, domain.KindEmail, c.emailKey) {
			claim = append(claim, domain.Key{Kind: domain.KindEmail, Key: c.emailKey, Field: "email"})
		}
	}
	if c.in.DisplayName != nil {
		next.DisplayName = c.display
	}
	next, _ = h.live(next)
	return next, claim
}

// UpdateUser changes an account's display name, username or email, by the
// user or an admin. The user proves the current password (and a second
// factor where the account has one) for a username or an email; an admin
// gives none, and may not change another admin's (reauth.go). A new
// username, or a new email asked for, is claimed and committed first, then
// the account is compared-and-set on its version, then the keys it no
// longer holds are released: a failure at any step leaves the old values
// in place. A new email stays pending until it is verified
// (emailchange.go): a notice with a revert link goes to the account's
// address first (the change fails if it cannot), the verification to the
// new one after the answer, and when the owner asked, every other session
// ends in the same compare-and-set (a new password epoch that the caller's
// session is named for, as ChangePassword does). A service without mail
// refuses a new address (ErrMailOff): no link could ever confirm it.
func (a *Service) UpdateUser(ctx context.Context, p domain.Principal, id string, in UpdateInput) (UserView, error) {
	if p.Anonymous() {
		return UserView{}, domain.ErrNoSession
	}
	if !domain.ValidID(id, domain.UserIDPrefix) {
		return UserView{}, domain.ErrUserNotFound
	}
	self := p.UserID == id
	if !self {
		if _, err := a.RequireAdmin(ctx, p); err != nil {
			return UserView{}, err
		}
	}
	change, err := checkUpdate(in)
	if err != nil {
		return UserView{}, err
	}
	var out UserView
	asked := false
	// noticed is the address key this request's notice went to ("" for
	// none yet): a round whose account has another address by then (a
	// change of its completed meanwhile) mails that one its own.
	noticed := ""
	// The owner's password is proved once (each check counts against
	// the throttle), again only if another password came into force.
	proven := -1
	err = domain.Retry(ctx, maxChangeAttempts, domain.ErrBusy, func(round int) (bool, error) {
		// Each round is an operation of its own: its claims carry its op,
		// so a write of an earlier round that lands late (a release, a
		// commit) can never touch this round's claim of the same key.
		op := domain.NewID("op_")
		if !self && round > 0 {
			// An admin's round lost to another change: the account's own
			// changes give way for a moment, as to a suspension
			// (updateByAdmin); a hold that failed only slows this.
			_, _ = a.users.Hold(ctx, id, op, domain.HoldFor)
		}
		u, err := a.users.GetSerial(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
			return false, domain.ErrUserNotFound
		}
		if err != nil {
			return false, err
		}
		if u.ModerationHeld && self {
			return false, domain.ErrHeldForModeration
		}
		if self {
			// The owner's change is decided on the row it writes over: a
			// suspension, a reset or a change by another session that
			// landed since the request was let through stopped its
			// session there, and the change must not land after them
			// (a rename or a new display name of a suspended user,
			// TestASuspendedMembersChangeInFlightDoesNotLand), nor name
			// its session for the epoch after theirs, which would bring
			// it back (a new address: TestAnOwnersRequestInFlightKeepsNoSessionPastASuspension).
			if ok, err := a.stillAdmits(ctx, u.Access(), p.Session); err != nil || !ok {
				return false, cmp.Or[error](err, domain.ErrNoSession)
			}
		}
		if change.respells(u) {
			// Before the proof: the address is the caller's to read
			// (Me), and nothing of it is spent on a refusal.
			return false, ErrOtherSpelling
		}
		// Another's cancel of the change u asked for is a change of u's
		// email too: no admin makes it on another admin's account.
		takes := change.credentials(u) || (!self && change.cancels(u, a.holdsAt(a.now())))
		if takes && !(self && proven == u.PasswordEpoch) {
			if err := a.mayTakeOver(ctx, p, u, in.Proof); err != nil {
				return false, err
			}
			proven = u.PasswordEpoch
		}
		now := a.now()
		h := a.holdsAt(now)
		session := ""
		if self {
			session = domain.SessionID(p.Session.TokenHash)
		}
		next, claim := change.apply(u, h, self, session)
		asked = change.asksEmail(u)
		if asked && refused(u, change.emailKey) {
			// Its reader said "not me" to an earlier change to it. Checked
			// on the row this round writes over (a refusal landing since
			// moves its version on), after the proof: a stolen session
			// alone learns nothing of the refusals.
			return false, ErrAddressRefused
		}
		if asked && !a.mailOn() {
			// Only its link makes a new address the account's, and
			// without mail none could be sent: refused as the token
			// routes are (every deployment mails).
			return false, ErrMailOff
		}
		if asked && noticed != u.EmailKey && !noticedBy(u, p, h) {
			// The notice first, to the address this round writes over;
			// nothing is written without it (held back by the mail
			// limit: 429 too_many_mails).
			if err := a.mailNotice(ctx, u); err != nil {
				return false, err
			}
			noticed = u.EmailKey
		}
		if asked && self {
			// The owner's other sessions end with this write: whoever
			// else holds one may be the thief the notice warns of.
			next.PasswordEpoch, next.PasswordSession = u.PasswordEpoch+1, p.Session.TokenHash
		}
		next.Version, next.UpdatedAt = u.Version+1, now
		var audited []domain.AuditEntry
		if !self {
			audited = changeEntries(p, u, next, change.cancels(u, h))
			if err := domain.CarryAdminChange(ctx, a.audit, &next, audited); err != nil {
				return false, err
			}
		}
		intent, err := a.intend(ctx, u, next)
		if err != nil {
			return false, err
		}
		done, sent, err := a.writeWithClaims(ctx, next, claim, op)
		a.settle(ctx, intent, audited, done, sent, err)
		if done {
			// next dropped the holds that had ended too (apply): they
			// go back with what the change left.
			a.releaseLeft(ctx, u, next)
			out = UserView{User: next.Shown(), Full: true}
			if h.heldName(next) {
				// Its end by the rule the claimer keeps: a suspension
				// may have moved it past HeldUsernameUntil. While one
				// without an end stands, none is shown.
				end, _ := h.nameEnd(next)
				out.User.HeldUsername, out.User.HeldUsernameUntil = next.HeldUsername, end
			}
			if asked {
				a.mailPendingEmail(ctx, next)
			}
		}
		if self && u.UsernameKey != next.UsernameKey && (done || (sent && errors.Is(err, domain.ErrOutcomeUnknown))) {
			// Told after an unknown compare-and-set too, as a password
			// change is: the rename may land later. Not after an unknown
			// claim or commit: the compare-and-set was never sent, and
			// the rename can never land
			// (TestARenameThatCouldNotLandIsNotToldAsDone).
			a.mailRenameNotice(ctx, u, next)
		}
		return done, err
	})
	if asked && self {
		if err := a.endSessions(ctx, err, id, "an email change"); err != nil {
			return UserView{}, err
		}
	}
	return out, err
}

// writeWithClaims claims and commits the keys next needs, then writes next
// by compare-and-set on the version before it. False without an error: the
// round lost a race (another change of the account holds a key or wrote
// first, or our lease ran out); its claims are given back and the caller
// starts over. sent reports whether the compare-and-set was sent: only
// then may next land, whatever the error. A round that cannot land gives
// back the claims it adopted too, once the account is fenced past the
// version it read (domain.Claimer.GiveBack).
func (a *Service) writeWithClaims(ctx context.Context, next domain.User, keys []domain.Key, op string) (applied, sent bool, err error) {
	id, base := next.ID, next.Version-1
	held, conflict, err := a.claimer.AcquireAll(ctx, keys, id, op, base, holders{a})
	if err != nil || conflict != nil {
		a.claimer.GiveBack(ctx, held, id, op, base, holders{a})
		switch {
		case err != nil:
			return false, false, err
		case conflict != domain.ErrBusy:
			return false, false, conflict
		}
		return false, false, nil
	}
	if ok, err := a.claimer.CommitAll(ctx, held, id, op, base); err != nil || !ok {
		a.claimer.GiveBack(ctx, held, id, op, base, holders{a})
		return false, false, err
	}
	applied, err = a.users.Update(ctx, next)
	switch {
	case errors.Is(err, domain.ErrOutcomeUnknown):
		// Keep everything: the new claims are committed to this account,
		// which may hold them now or when a held attempt lands. The retry
		// adopts them; once the account's version moves on, any left over
		// are orphans anyone may take over.
		return false, true, err
	case err != nil:
		// Answered, and not applied (it was never sent): give them back.
		a.claimer.GiveBack(ctx, held, id, op, base, holders{a})
		return false, false, err
	case !applied:
		a.claimer.GiveBack(ctx, held, id, op, base, holders{a}) // another change won
	}
	return applied, true, nil
}

// updateAccount is the read -> change -> compare-and-set loop of one
// account. change gets the account as read at SERIAL and returns it
// changed, or write=false when there is nothing to write (the account is
// then returned as read). An account that is not there is ErrNotFound.
func (a *Service) updateAccount(ctx context.Context, id string, change func(u domain.User) (next domain.User, write bool, err error)) (domain.User, error) {
	return a.updateRounds(ctx, id, byOwner, change)
}

// updateByAdmin is updateAccount for an admin's change of another's
// account (ending its sessions, the fence of his removal of its factor;
// the operator's grant or revocation of the role; UpdateUser does the
// same for his changes of it): as a suspension's, a round that follows a
// lost one holds the account's own changes back first, and the admin's
// change does not give way to a hold, so that no user keeps it from
// landing by changing his account over and over
// (docs/design/suspension.md, "The owner gives way").
func (a *Service) updateByAdmin(ctx context.Context, id string, change func(u domain.User) (next domain.User, write bool, err error)) (domain.User, error) {
	return a.updateRounds(ctx, id, byAdmin, change)
}

// updateRecovery is updateAccount for a recovery by a mailed link (a
// reset, the revert of an email change or of a factor's addition): the
// owner's way back from a thief who holds a session of the account, and
// maybe its password. As an admin's change (updateByAdmin), a round that
// follows a lost one holds the account's own changes back first, and
// the recovery does not give way to a recovery's hold: else the thief,
// signing out everywhere else from the session he keeps (no rate limit:
// it must work for an owner facing a thief) just before each round
// lands, keeps it from landing for as long as he likes
// (TestAThiefsSignOutsCannotHoldTheOwnersRecoveryBack). It gives way to
// an admin's hold, and its own never takes an admin's place (HoldFree):
// a user holds revert links of his own address, as many as he asked for
// changes of it, none going stale by another recovery, and following
// one before each of an admin's rounds kept the admin's change from
// landing (TestAUserCannotHoldHisSuspensionBackWithHisRevertLinks).
// Nobody loops a recovery in turn: each takes a mailed token, and once
// it applied its retries write nothing.
func (a *Service) updateRecovery(ctx context.Context, id string, change func(u domain.User) (next domain.User, write bool, err error)) (domain.User, error) {
	return a.updateRounds(ctx, id, byRecovery, change)
}

// changer is who makes a change of an account, which decides how it
// meets a hold (domain.User.ModerationHeld).
type changer int

const (
	// byOwner gives way to every hold and writes none.
	byOwner changer = iota
	// byAdmin holds after a lost round and never gives way.
	byAdmin
	// byRecovery holds after a lost round where no hold lives, and gives
	// way to an admin's hold only.
	byRecovery
)

// givesWay reports whether a change by c gives way to u's hold.
func (c changer) givesWay(u domain.User) bool {
	if !u.ModerationHeld || !u.Visible() {
		return false
	}
	switch c {
	case byAdmin:
		return false
	case byRecovery:
		return !u.RecoveryHeld
	}
	return true
}

// updateRounds is updateAccount, updateByAdmin and updateRecovery.
func (a *Service) updateRounds(ctx context.Context, id string, by changer, change func(u domain.User) (next domain.User, write bool, err error)) (domain.User, error) {
	var out domain.User
	tag := ""
	err := domain.Retry(ctx, maxChangeAttempts, domain.ErrBusy, func(round int) (bool, error) {
		if round > 0 {
			// The last round lost to another change; a hold that failed
			// only slows this.
			switch by {
			case byAdmin:
				tag = cmp.Or(tag, domain.NewAttempt())
				_, _ = a.users.Hold(ctx, id, tag, domain.HoldFor)
			case byRecovery:
				tag = cmp.Or(tag, domain.NewRecoveryHold())
				_, _ = a.users.HoldFree(ctx, id, tag, domain.HoldFor)
			}
		}
		u, err := a.users.GetSerial(ctx, id)
		if err != nil {
			return false, err
		}
		if by.givesWay(u) {
			// An admin's suspension or unsuspension (or another change of
			// his) lost a round to another change: this one gives way, so
			// that no user keeps it from landing by changing his account
			// over and over (docs/design/suspension.md).
			return false, domain.ErrHeldForModeration
		}
		next, write, err := change(u)
		if err != nil {
			return false, err
		}
		if !write {
			out = u
			return true, nil
		}
		// The write drops the holds that have ended, as a change's does
		// (accountChange.apply): it is a fence of them (holders.Holder),
		// so that the owner cannot keep a claimer's fence from landing by
		// writing the row again and again with an ended hold in it (a
		// sign-out everywhere else before each of its rounds:
		// TestAnAccountCannotKeepAnEndedHoldsAddressBySigningOut). What
		// it drops is given back once it applied (releaseLeft), or a
		// deletion would find it named nowhere. A deleted row is left as
		// written: it holds nothing (Holder), and the keys it still
		// names are kept there until their claims are released
		// (MarkDeleted, ReleaseHeld).
		now := a.now()
		changed, ended := next, false
		if next.Status != domain.StatusDeleted {
			next, ended = a.holdsAt(now).live(next)
		}
		next.Version, next.UpdatedAt = u.Version+1, now
		var own []domain.AuditEntry
		if carriesOwn(u, next) {
			own = next.AdminChange
		}
		intent, err := a.intend(ctx, u, next)
		if err != nil {
			return false, err
		}
		applied, err := a.users.Update(ctx, next)
		// An error but an unknown outcome is an answer: never sent.
		a.settle(ctx, intent, own, applied, err == nil || errors.Is(err, domain.ErrOutcomeUnknown), err)
		if applied {
			out = next
			if ended {
				a.releaseLeft(ctx, changed, next)
			}
		}
		return applied, err
	})
	return out, err
}

// errNotOwnPassword refuses a change of another account's password, an
// admin's too.
var errNotOwnPassword = domain.Denied("Only the account's owner may change its password, from a session of that account; " +
	"a forgotten password is replaced through a reset link (POST /v1/password-resets).")

// ChangePassword sets a new password after checking the owner's proof
// (the current password, and a second factor where the account has one),
// and revokes every other session of the user. The compare-and-set moves
// the password epoch on and names the caller's session as the one that
// set it, so in the same write every other session stops working (a login
// in flight included) and the caller's goes on.
func (a *Service) ChangePassword(ctx context.Context, p domain.Principal, id string, current Proof, next string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	if p.UserID != id {
		return errNotOwnPassword
	}
	// The current password is checked once, counted by the throttle, not
	// in every round of the compare-and-set below; a round that finds
	// another password in force (a new epoch) refuses, since the one
	// checked is no longer the account's.
	checked, err := a.users.GetSerial(ctx, id)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return domain.ErrNoSession
		}
		return err
	}
	if checked.ModerationHeld && checked.Visible() {
		// Before the proof: a change that would give way below spends
		// no try of the throttle and no hash.
		return domain.ErrHeldForModeration
	}
	if fe := a.passwordRules("newPassword", next, checked.UsernameKey, checked.EmailKey); fe != nil {
		return domain.Invalid("The new password is not valid.", *fe)
	}
	if err := a.proveOwner(ctx, checked, current); err != nil {
		return err
	}
	// Breaches last: the one check that asks another service, and only
	// of a caller who proved the current password.
	if err := a.breachedPassword(ctx, "newPassword", next); err != nil {
		return err
	}
	hash, err := a.hasher.Hash(ctx, next)
	if err != nil {
		return err
	}
	// tried is the account as the last round would write it: the row its
	// compare-and-set is over, the address a change in force was written
	// over (a change of address may complete after checked was read).
	var tried domain.User
	out, err := a.updateAccount(ctx, id, func(u domain.User) (domain.User, bool, error) {
		if u.PasswordEpoch != checked.PasswordEpoch {
			return u, false, ErrInvalidCredentials
		}
		if ok, err := a.stillAdmits(ctx, u.Access(), p.Session); err != nil || !ok {
			// The caller's session no longer works (a suspension, a
			// sign-out everywhere or a reset landed since it was
			// authenticated, before the read above): naming it for the
			// new epoch would bring it back.
			return u, false, cmp.Or[error](err, domain.ErrNoSession)
		}
		if fe := a.passwordRules("newPassword", next, u.UsernameKey, u.EmailKey); fe != nil {
			return u, false, domain.Invalid("The new password is not valid.", *fe)
		}
		u.PasswordHash, u.PasswordEpoch, u.PasswordSession = hash, u.PasswordEpoch+1, p.Session.TokenHash
		tried = u
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ErrNoSession
	}
	switch {
	case err == nil:
		a.mailPasswordNotice(ctx, out)
	case errors.Is(err, domain.ErrOutcomeUnknown) && tried.ID != "":
		// The change may be in force, or land later: told all the same
		// (a notice of a change that never happened carries a reset link
		// that works, which does no harm), to the address of the row its
		// compare-and-set is over, as that row would have it (not
		// checked's: a change of address may have completed since;
		// TestALostPasswordChangeIsToldAtTheAddressItWasWrittenOver).
		a.mailPasswordNotice(ctx, tried)
	}
	return a.endSessions(ctx, err, id, "a password change")
}

// mailPasswordNotice tells u's address, after the answer, that its
// password was changed, with a reset link for an owner who did not
// change it: the link works until a recovery (a later change of the
// password keeps it), and a reset made with it ends every session, the
// changer's too (docs/design/tokens.md). Counted and held back past the
// address's hourly limit in the budget of the account's own mails
// (owners: a stranger's resets do not spend it): a stranger cannot aim
// it (it takes the account's session and password), and what else can
// spend that budget are the notices of the account's own actions and
// verifications asked with its session. Mailed after an unknown outcome
// too. A failure is logged.
func (a *Service) mailPasswordNotice(ctx context.Context, u domain.User) {
	if !a.mailOn() {
		return
	}
	a.afterAnswerSure(ctx, "mailing a password change's notice", func(ctx context.Context) error {
		return a.sendMessage(ctx, u, PurposeResetPassword, heldBack, owners, "", a.passwordNotice)
	})
}

// mailRenameNotice tells the address of before, the row a rename by its
// owner wrote over, after the answer, that the username changed to
// after's, with a reset link for an owner who did not change it: whoever
// did knows her password, and once she has chosen a new one she may take
// the name back while it is held (docs/design/renames.md). Sent and
// counted as a password change's notice (mailPasswordNotice).
func (a *Service) mailRenameNotice(ctx context.Context, before, after domain.User) {
	if !a.mailOn() {
		return
	}
	a.afterAnswerSure(ctx, "mailing a rename's notice", func(ctx context.Context) error {
		return a.sendMessage(ctx, before, PurposeResetPassword, heldBack, owners, "", func(u domain.User, token string) Message {
			return a.renameNotice(u, after, token)
		})
	})
}

// endSessions follows a compare-and-set that moved userID's password
// epoch on, whose outcome was err, and answers err. The epoch has ended
// every session it did not keep (Authenticate and the list admit a
// session only at the account's epoch, or named as its PasswordSession),
// so what is left is tidying, after the answer: deleting the rows of the
// sessions it stopped (sweepSessions), and the enrolments waiting for a
// first code (dropEnrolments). After an unknown outcome too (the new
// epoch may be in force; if not, the sweep deletes nothing), then "try
// again". what names the write in the log.
func (a *Service) endSessions(ctx context.Context, err error, userID, what string) error {
	if err == nil || errors.Is(err, domain.ErrOutcomeUnknown) {
		a.sweepSessions(ctx, userID, what)
		a.dropEnrolments(ctx, userID, what)
	}
	return err
}

// dropEnrolments removes, after the answer, every enrolment of userID
// still waiting for its first code when what ended sessions of the
// account: each was begun by a session, maybe one that ended. A thief
// with the password and a session of an account without a factor could
// otherwise keep its bound of factors (maxFactors, pending ones
// included) full of enrolments he never confirms, so that the owner's own
// is refused for as long as he begins them again; signing out everywhere
// else frees them (TestAThiefsPendingEnrolmentsEndWithHisSessions). One
// begun by a session kept is taken too, and begun again. Each removal is
// conditioned on the enrolment still pending: one confirmed since the
// read (by a request already past its session's check) stands, as any
// factor confirmed before the sessions ended does, its notice mailed.
// What a failure leaves expires with enrolmentTTL.
func (a *Service) dropEnrolments(ctx context.Context, userID, what string) {
	rows := a.factorRows()
	if rows == nil {
		return
	}
	a.afterAnswerSweep(ctx, "enrolments/"+userID, "removing the enrolments pending when "+what+" ended sessions", true, func(ctx context.Context) error {
		return dropPending(ctx, rows, rows.RemovePending, userID, "")
	})
}

// SetAdmin grants (or revokes) the admin role of the account with this
// username or email (`api admin grant|revoke`: the audit's entry names
// the command line, no actor). Doing it twice is the same as doing it
// once, and makes one entry. The compare-and-set decides again on the
// account it reads: one deleted since the lookup is not found. A grant
// by an email refuses an account whose address is not verified (whoever
// signed up with the address may not read it; by username it goes on).
func (a *Service) SetAdmin(ctx context.Context, login string, admin bool) (domain.User, error) {
	notFound := &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No user has the username or email " + login + "."}
	found, err := a.findByLogin(ctx, login)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.User{}, notFound
	}
	if err != nil {
		return domain.User{}, err
	}
	kind, key, _ := loginKey(login)
	byAddress := kind == domain.KindEmail
	// The operator's change: the account's own do not hold it back.
	out, err := a.updateByAdmin(ctx, found.ID, func(u domain.User) (domain.User, bool, error) {
		if !u.Visible() {
			// Deleted (or deleting) since the lookup: no one to grant.
			return u, false, notFound
		}
		if u.IsAdmin() == admin {
			return u, false, domain.CarryAdminChange(ctx, a.audit, &u, nil)
		}
		if admin && byAddress && (u.EmailKey != key || u.EmailVerifiedAt.IsZero()) {
			// The operator names whoever reads the address (still this
			// account's: checked again here); whoever signed up with it
			// never proved to.
			return u, false, &domain.Error{Kind: domain.ErrConflict, Code: "email_not_verified",
				Message: "The address " + login + " is not the verified address of the account found (" + u.Username + ", " + u.ID +
					"), which may be a stranger's. Grant it by username if it is the one you mean, or once its owner has verified the address."}
		}
		e := domain.AuditEntry{UserID: u.ID, At: a.now(), Version: u.Version + 1, Action: domain.AuditRoleRevoked, Via: domain.ViaCLI}
		if admin {
			e.Action = domain.AuditRoleGranted
			u.Roles = append(slices.Clone(u.Roles), domain.RoleAdmin)
		} else {
			u.Roles = slices.DeleteFunc(slices.Clone(u.Roles), func(r string) bool { return r == domain.RoleAdmin })
		}
		// Written to the audit by updateRounds once it applied.
		return u, true, domain.CarryAdminChange(ctx, a.audit, &u, []domain.AuditEntry{e})
	})
	return out, err
}
