package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAThiefsOtherSpellingOfTheAddressDoesNotTakeItsMail: ann's address
// is ann@grass.example.org. A thief with a session and her password
// writes it ann@graß.example.org: the same key under full case folding
// (U1), so no new address is asked for, no notice goes and no link
// confirms it, yet another domain, where every mail of the account would
// then go (his next change's notice and its revert link, every reset
// link). The spelling is refused, 400 naming email, and his change of
// address is told at her address; a change of letter case alone still
// goes through.
func TestAThiefsOtherSpellingOfTheAddressDoesNotTakeItsMail(t *testing.T) {
	t.Parallel()
	const home, elsewhere = "ann@grass.example.org", "ann@graß.example.org"
	m := emailChangeWorld(t, false)
	moveAnn(t, m, home)
	err := changeEmailFrom(m, elsewhere)
	var de *domain.Error
	if !errors.Is(err, domain.ErrInvalid) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "email" {
		t.Errorf("the address written with ß: %v, want 400 naming email", err)
	}
	if u := m.account(t, "after the other spelling"); u.Email != home {
		t.Fatalf("the account's address is now %q, want %q", u.Email, home)
	}
	notices := m.box.sentTo("revert-email", home)
	if err := changeEmailFrom(m, annOther); err != nil {
		t.Fatal(err)
	}
	if got := m.box.sentTo("revert-email", home); got != notices+1 {
		t.Errorf("the thief's change of address mailed %d notices to %s, want 1", got-notices, home)
	}
	if got := m.box.sentTo("revert-email", elsewhere); got != 0 {
		t.Errorf("%d notices went to %s", got, elsewhere)
	}
	const cased = "Ann@Grass.Example.org"
	if err := changeEmailFrom(m, cased); err != nil {
		t.Fatalf("a change of letter case: %v", err)
	}
	if u := m.account(t, "after a change of case"); u.Email != cased || u.PendingEmailKey != "" {
		t.Errorf("after a change of case: %q pending %q", u.Email, u.PendingEmail)
	}
}

// TestAChangeBackWrittenWithOtherLettersLeavesTheOwnersRevert: ann's
// address is ann@grass.example.org. A thief with a session and her
// password moves the account to his address and confirms it (her
// address held for her revert link), then asks for her address back
// written ann@graß.example.org: the key held, so a change back, whose
// link goes to that spelling, another domain, his. Confirmed, it would
// end the hold, and her revert link, the same key, would mail its reset
// link to his spelling. It is refused (400 naming email), and her revert
// gives her address back, its reset link mailed to it alone.
func TestAChangeBackWrittenWithOtherLettersLeavesTheOwnersRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const home, elsewhere = "ann@grass.example.org", "ann@graß.example.org"
	m := emailChangeWorld(t, false)
	moveAnn(t, m, home)
	m.store.Advance(accounts.DefaultRevertTTL + accounts.TokenGrace + time.Minute) // annHome's hold is over
	moveAnn(t, m, annNext)                                                         // the thief's
	err := changeEmailFrom(m, elsewhere)
	var de *domain.Error
	if !errors.Is(err, domain.ErrInvalid) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "email" {
		t.Errorf("the held address written with ß: %v, want 400 naming email", err)
	}
	if link := m.box.tokenTo("verify", elsewhere); link != "" {
		if err := m.svc.ConfirmEmail(ctx, link); err != nil {
			t.Fatal(err)
		}
	}
	revertsHome(t, m, home, elsewhere)
}

// TestAConfirmationOfOneSpellingDoesNotGiveTheAccountAnother: ann asks
// for ann@grass.example.org; a thief with her session and password asks
// again for the same key written ann@graß.example.org (another domain,
// his): the change pending now names his spelling. Ann's link, mailed
// to hers, confirmed the key and made his spelling the account's
// address, one she never confirmed. Her link is now stale, and the
// account keeps its address.
func TestAConfirmationOfOneSpellingDoesNotGiveTheAccountAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const hers, his = "ann@grass.example.org", "ann@graß.example.org"
	m := emailChangeWorld(t, false)
	if err := changeEmail(m, hers); err != nil {
		t.Fatal(err)
	}
	if err := changeEmail(m, his); err != nil { // the same session: no second notice
		t.Fatal(err)
	}
	err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", hers))
	if !errors.Is(err, accounts.ErrTokenStale) {
		t.Errorf("her link once the change pending names his spelling: %v, want stale", err)
	}
	if u := m.account(t, "after her link"); u.Email != annHome || u.PendingEmail != his {
		t.Errorf("after her link: address %q, pending %q", u.Email, u.PendingEmail)
	}
}

// TestLettersOfOneKeyAreAnotherSpellingOfTheAddress: letters that fold
// to one key (U1) may spell two domains. ς and σ: IDNA2008 keeps them
// apart (ας.example.org is another domain than ασ.example.org), and
// simple case folding (strings.EqualFold) takes them for one letter. ẞ
// (U+1E9E) is ß's capital by unicode.ToLower, yet IDNA maps ẞ to ss and
// keeps ß (graẞ.example.org is grass.example.org, another domain than
// graß.example.org's xn--gra-7ka). For each, with ann's address in her
// spelling: a thief with a session and her password who writes it in his
// is refused (400 other_spelling, not taken as a change of letter case),
// and a verification link mailed to her spelling does not confirm a
// change pending that names his instead.
func TestLettersOfOneKeyAreAnotherSpellingOfTheAddress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, hers, his string }{
		{"final sigma", "ann@ασ.example.org", "ann@ας.example.org"},
		{"capital sharp s", "ann@graß.example.org", "ann@graẞ.example.org"},
	} {
		t.Run(c.name+"/her own address", func(t *testing.T) {
			t.Parallel()
			m := emailChangeWorld(t, false)
			moveAnn(t, m, c.hers)
			err := changeEmailFrom(m, c.his)
			var de *domain.Error
			if !errors.Is(err, domain.ErrInvalid) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Code != "other_spelling" {
				t.Errorf("the address written %s: %v, want 400 other_spelling", c.his, err)
			}
			if u := m.account(t, "after the other spelling"); u.Email != c.hers {
				t.Errorf("the account's address is now %q, want %q", u.Email, c.hers)
			}
		})
		t.Run(c.name+"/her link", func(t *testing.T) {
			t.Parallel()
			m := emailChangeWorld(t, false)
			if err := changeEmail(m, c.hers); err != nil {
				t.Fatal(err)
			}
			if err := changeEmail(m, c.his); err != nil {
				t.Fatal(err)
			}
			err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", c.hers))
			if !errors.Is(err, accounts.ErrTokenStale) {
				t.Errorf("her link once the change pending names his spelling: %v, want stale", err)
			}
			if u := m.account(t, "after her link"); u.Email != annHome {
				t.Errorf("after her link the address is %q, want %q", u.Email, annHome)
			}
		})
	}
}

// TestARevertWritesBackTheAddressAsItsLinkWasMailed: before other
// spellings were refused, a thief with a session and ann's password moved
// the account to his address and then back to hers written
// ann@graß.example.org (the key held, so a change back, its link at his
// domain), which ended the hold; the row kept the key with his spelling.
// Her revert link, the same key, applied, kept the spelling it found and
// mailed its reset link there: to him. Such a row is planted here (no
// request makes one now): the revert writes the address back as its link
// was mailed, and mails the reset link to it alone.
func TestARevertWritesBackTheAddressAsItsLinkWasMailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const home, elsewhere = "ann@grass.example.org", "ann@graß.example.org"
	m := emailChangeWorld(t, false)
	moveAnn(t, m, home)
	homeKey := m.account(t, "at home").EmailKey
	moveAnn(t, m, annNext) // the thief's
	u := m.account(t, "after the thief's move")
	u.Email, u.EmailKey = elsewhere, homeKey
	u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
	u.Version++
	if applied, err := m.store.Users().Update(ctx, u); err != nil || !applied {
		t.Fatalf("planting the respelled row: %v %v", applied, err)
	}
	revertsHome(t, m, home, elsewhere)
}

// revertsHome follows ann's revert link mailed to home and checks that
// the address is home again and that its reset link went there, none to
// elsewhere.
func revertsHome(t *testing.T, m *mailWorld, home, elsewhere string) {
	t.Helper()
	if err := m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", home)); err != nil {
		t.Fatalf("her revert: %v", err)
	}
	if u := m.account(t, "after her revert"); u.Email != home {
		t.Errorf("after her revert the address is %q, want %q", u.Email, home)
	}
	if got := m.box.sentTo("reset", elsewhere); got != 0 {
		t.Errorf("her revert mailed %d reset links to %s", got, elsewhere)
	}
	if got := m.box.sentTo("reset", home); got != 1 {
		t.Errorf("her revert mailed %d reset links to %s, want 1", got, home)
	}
}

// TestOneMailboxWrittenTwoWaysIsTaken: ann signs up with her address's
// domain in Unicode; another signup with the same mailbox written in
// punycode (xn--bcher-kva.de), or with an ideographic full stop for a
// dot, was a key of its own and took a second account for her mailbox
// (U1), its verification mailed to her. Both are refused as taken, and a
// login by either spelling finds her account.
func TestOneMailboxWrittenTwoWaysIsTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	if err := w.signup("ann", "ann@mail.bücher.de"); err != nil {
		t.Fatal(err)
	}
	for i, other := range []string{"ann@mail.xn--bcher-kva.de", "ann@mail\u3002bücher.de"} {
		err := w.signup(fmt.Sprintf("other%d", i), other)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.ErrConflict || len(de.Fields) != 1 || de.Fields[0].Field != "email" || de.Fields[0].Code != "taken" {
			t.Errorf("a signup with %q: %v, want the email taken", other, err)
		}
		if r, err := w.svc.Login(ctx, other, password, accounts.Client{}); err != nil || r.Token == "" {
			t.Errorf("ann's login by %q: %v", other, err)
		}
	}
}

// TestTwoSpellingsOfAPunycodeLabelThatFoldAlikeAreOneAccountsAddress:
// a@xn--bcher-kvẞ.de and a@xn--bcher-kvss.de are one mailbox (IDNA
// maps ẞ to ss) and one key by the key's own fold, but the first label
// was tested for punycode before it was folded and kept as written, the
// second decoded: two keys, and each spelling signed up an account of
// its own (U1). The second signup is now refused 409 naming email.
func TestTwoSpellingsOfAPunycodeLabelThatFoldAlikeAreOneAccountsAddress(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("ann", "a@xn--bcher-kvẞ.de"); err != nil {
		t.Fatal(err)
	}
	err := w.signup("bob", "a@xn--bcher-kvss.de")
	var de *domain.Error
	if !errors.Is(err, domain.ErrConflict) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "email" {
		t.Errorf("a signup with the other spelling answered %v, want 409 naming email", err)
	}
}
