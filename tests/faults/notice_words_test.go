package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// noticeTo is the text of the last email change notice mailed to address.
func (b *recorder) noticeTo(address string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := ""
	for _, msg := range b.sent {
		if msg.To == address && strings.Contains(msg.Text, "/#/revert-email?token=") {
			text = msg.Text
		}
	}
	return text
}

// TestANoticeSaysHowLongItsLinkWorks: a change's notice says its revert
// link works "also after the new address is confirmed", which holds when
// the address it goes to is the one the confirmation will hold. Here ann
// moved from annHome to annNext within the week (annHome held for that
// change's revert), and a change to the thief's address is asked from
// annNext: its confirmation keeps the older hold, annNext is not held, and
// the link at annNext is stale once the thief confirms. Its notice must
// say the link works only until then, not promise what it will not do;
// a first change's notice (nothing held) keeps the promise, and keeps it.
func TestANoticeSaysHowLongItsLinkWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const promise = "also after the new address is confirmed"
	for _, moved := range []bool{false, true} {
		m := emailChangeWorld(t, false)
		at := annHome
		if moved {
			moveAnn(t, m, annNext)
			at = annNext
		}
		moveAnn(t, m, thiefsAddress)
		notice := m.box.noticeTo(at)
		err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", at))
		promised := strings.Contains(notice, promise)
		switch {
		case notice == "":
			t.Fatalf("moved %v: no notice reached %s", moved, at)
		case promised && err != nil:
			t.Errorf("moved %v: the notice at %s says its link works %s, and after the confirmation it answered %v", moved, at, promise, err)
		case !promised && err == nil:
			t.Errorf("moved %v: the notice at %s does not say its link works after the confirmation, and it did", moved, at)
		case !promised && !strings.Contains(notice, "before the new address is confirmed"):
			t.Errorf("moved %v: the notice at %s does not say until when its link works:\n%s", moved, at, notice)
		}
		if !moved && !promised {
			t.Errorf("a first change's notice at %s no longer says its link works %s", at, promise)
		}
	}
}

// TestANoticeSaysItsLinkWorksAfterAConfirmationPastTheOlderHold: ann
// moved from annHome to annNext a week ago, less an hour (annHome held
// for that change's revert until its week ends), and a change
// to the thief's address is asked from annNext: its notice said its link
// works only until the confirmation, that address's link being the way
// back after. The thief confirms two hours later, past annHome's hold:
// the confirmation holds annNext, whose link then works, and annHome's
// is stale. The notice said the opposite of both, and an owner who
// believed it would not follow the one link that gives her address
// back. It must say from when a confirmation leaves its link working.
func TestANoticeSaysItsLinkWorksAfterAConfirmationPastTheOlderHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	moveAnn(t, m, annNext)
	held := m.account(t, "after the move")
	m.store.Advance(accounts.DefaultRevertTTL - time.Hour)
	if err := changeEmailFrom(m, thiefsAddress); err != nil {
		t.Fatal(err)
	}
	notice := m.box.noticeTo(annNext)
	m.store.Advance(2*time.Hour + time.Minute)
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", thiefsAddress)); err != nil {
		t.Fatal(err)
	}
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annNext)); err != nil {
		t.Fatalf("annNext's link after a confirmation past annHome's hold: %v", err)
	}
	if end := held.RecoveryUntil.UTC().Format(accounts.NoticeTime); !strings.Contains(notice, end) {
		t.Errorf("the notice at annNext does not say its link works after a confirmation from %s on:\n%s", end, notice)
	}
}

// TestANoticesMomentIsNeverEarlierThanTheHoldsEnd: ann moved from
// annHome to annNext at 12:00:40 (a confirmation keeps annHome held until
// a week later, at 12:00:40), and a change to the thief's address is asked
// from annNext within that week. Its notice named the hold's end to the
// minute, cut down: 12:00, forty seconds before it. The thief
// confirms at 12:00:20, "from then on" by the notice's words, so its link
// at annNext should work after it; yet annHome is still held, and the
// confirmation leaves annNext's link stale. The moment the notice names
// must be the hold's end itself.
func TestANoticesMomentIsNeverEarlierThanTheHoldsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	m.store.Advance(40 * time.Second)
	moveAnn(t, m, annNext)
	end := m.account(t, "after the move").RecoveryUntil
	m.store.Advance(accounts.DefaultRevertTTL - time.Hour)
	if err := changeEmailFrom(m, thiefsAddress); err != nil {
		t.Fatal(err)
	}
	notice := m.box.noticeTo(annNext)
	shown := end.Truncate(time.Minute)
	m.store.Advance(shown.Add(20 * time.Second).Sub(m.store.Now()))
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", thiefsAddress)); err != nil {
		t.Fatal(err)
	}
	revert := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annNext))
	if !strings.Contains(notice, end.UTC().Format(accounts.NoticeTime)) {
		t.Errorf("the notice at annNext does not name the hold's end, %s:\n%s", end.UTC().Format(time.TimeOnly), notice)
	}
	if says := shown.UTC().Format("2 January 2006, 15:04 UTC"); strings.Contains(notice, says) && revert != nil {
		t.Errorf("the notice at annNext says a confirmation from %s on leaves its link working; one at %s, before the hold's end at %s, left it %v",
			says, m.store.Now().UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), revert)
	}
}

// TestAConfirmationPastTheOlderLinkLeavesAWorkingRevert: ann moved from
// annHome to annNext (its revert link, at annHome, works for a week),
// and a change to the thief's address is asked from annNext two hours
// before that week ends. The thief confirms half an hour after it ended:
// annHome's link has expired, yet its address was still held for the
// grace in which a use begun before may finish, so the confirmation kept
// that hold and left annNext unheld, its link stale. Neither link
// recovered the account, though the owner reads both addresses. A
// confirmation keeps an older address held only while its link works.
func TestAConfirmationPastTheOlderLinkLeavesAWorkingRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	moveAnn(t, m, annNext)
	m.store.Advance(accounts.DefaultRevertTTL - 2*time.Hour)
	if err := changeEmailFrom(m, thiefsAddress); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(2*time.Hour + 30*time.Minute)
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", thiefsAddress)); err != nil {
		t.Fatal(err)
	}
	older := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome))
	newer := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annNext))
	if older != nil && newer != nil {
		t.Errorf("no revert link works after the thief's confirmation: annHome's answered %v, annNext's %v", older, newer)
	}
}

// TestANoticeOfAChangeBackInTheGraceHourDoesNotPromiseItsLink: ann moved
// from annHome to annNext (annHome held for that change's revert for a
// week, and for the grace hour after it), and half an hour past that
// week a change back to annHome is asked from annNext. The older link has
// expired, so the notice at annNext promised its link works "also after
// the new address is confirmed"; yet a confirmation of the address held
// is a change back, which holds nothing, and annNext's link is then
// stale. The notice must say its link works only until the confirmation,
// as it does while the older link works.
func TestANoticeOfAChangeBackInTheGraceHourDoesNotPromiseItsLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	moveAnn(t, m, annNext)
	m.store.Advance(accounts.DefaultRevertTTL + 30*time.Minute)
	if err := changeEmailFrom(m, annHome); err != nil {
		t.Fatalf("a change back to annHome in its grace hour: %v", err)
	}
	notice := m.box.noticeTo(annNext)
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatal(err)
	}
	revert := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annNext))
	if strings.Contains(notice, "also after the new address is confirmed") && revert != nil {
		t.Errorf("the notice at annNext promised its link works after the confirmation of the change back, and it answered %v:\n%s", revert, notice)
	}
}
