package broken

import (
	"context"
	"errors"
	"testing"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/repository"
)

// answers is a Sender whose every attempt answers err.
type answers struct {
	repository.Sender
	err error
}

func (a answers) Begin(string) repository.Transaction { return attempt{a.err} }

type attempt struct{ err error }

func (a attempt) Attempt(context.Context, func(context.Context) (bool, error)) (bool, error) {
	return false, a.err
}
func (attempt) Done() {}

// TestUnsettledReportsAmbiguousAnswersUnknown: an ambiguous answer comes
// back unknown and no longer ambiguous, so the DB does not read it back;
// an answer that is not ambiguous is left as it is.
func TestUnsettledReportsAmbiguousAnswersUnknown(t *testing.T) {
	t.Parallel()
	run := func(context.Context) (bool, error) { return true, nil }
	tx := Unsettled(answers{err: gocql.ErrTimeoutNoResponse}).Begin("users.activate")
	_, err := tx.Attempt(context.Background(), run)
	if !errors.Is(err, domain.ErrOutcomeUnknown) || !errors.Is(err, domain.ErrUnavailable) || repository.Ambiguous(err) {
		t.Fatalf("a timeout: %v (unknown %v, ambiguous %v)", err, errors.Is(err, domain.ErrOutcomeUnknown), repository.Ambiguous(err))
	}
	refused := &gocql.RequestErrUnavailable{}
	if _, err := Unsettled(answers{err: refused}).Begin("users.activate").Attempt(context.Background(), run); err != refused {
		t.Fatalf("an unavailable node: %v", err)
	}
}

// TestGuessTakesUnknownForNotApplied: the broken stores answer an unknown
// outcome "not applied", and leave every other answer as it is.
func TestGuessTakesUnknownForNotApplied(t *testing.T) {
	t.Parallel()
	unknown := errors.Join(domain.ErrOutcomeUnknown, domain.ErrUnavailable)
	if applied, err := guess(false, unknown); applied || err != nil {
		t.Fatalf("unknown: %v %v", applied, err)
	}
	if applied, err := guess(true, nil); !applied || err != nil {
		t.Fatalf("applied: %v %v", applied, err)
	}
	if _, err := guess(false, domain.ErrUnavailable); err != domain.ErrUnavailable {
		t.Fatalf("not sent: %v", err)
	}
}
