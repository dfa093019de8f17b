package seeds

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
	"shelf/repository"
)

// Shelf is shelf's own claim protocol, the product code used as a library
// (docs/design/signup.md): both keys claimed at once with `INSERT ... IF
// NOT EXISTS USING TTL <lease>`, then both committed with `UPDATE ... USING
// TTL 0 ... IF user_id = ? AND op = ?`; a key taken, or a failure, gives
// back what was held. Ambiguous outcomes are settled by the repository with
// SERIAL reads (U5). A claimant wins when it committed both keys; the
// user row of a real signup is left out, as it is not what is compared.
type Shelf struct {
	claims  *repository.Claims
	claimer *domain.Claimer
	db      *repository.DB
}

// NewShelf returns shelf's protocol on db, whose keyspace Setup migrates.
func NewShelf(db *repository.DB, lease time.Duration) *Shelf {
	claims := repository.NewClaims(db)
	return &Shelf{claims: claims, claimer: domain.NewClaimer(claims, lease, quietLog{}), db: db}
}

// Name implements Pattern.
func (s *Shelf) Name() string { return "shelf (LWT claims, commit)" }

// Setup applies shelf's schema (its claim tables among it).
func (s *Shelf) Setup(ctx context.Context) error { return repository.Migrate(ctx, s.db.Session) }

// Claim implements Pattern: AcquireAll, then CommitAll; the claimant's id
// is both the owner and the operation, as in a signup.
func (s *Shelf) Claim(ctx context.Context, p Pair, claimant string) (Won, error) {
	keys := []domain.Key{
		{Kind: domain.KindUsername, Key: p.Username, Field: "username"},
		{Kind: domain.KindEmail, Key: p.Email, Field: "email"},
	}
	held, conflict, err := s.claimer.AcquireAll(ctx, keys, claimant, claimant, 0, liveOwners{})
	if err != nil || conflict != nil {
		s.claimer.ReleaseAll(ctx, held, claimant, claimant)
		return Won{}, err
	}
	ok, err := s.claimer.CommitAll(ctx, held, claimant, claimant, 0)
	if err != nil || !ok {
		s.claimer.ReleaseAll(ctx, held, claimant, claimant)
		return Won{}, err
	}
	return Won{Username: true, Email: true}, nil
}

// Holders implements Pattern: the owner of each committed claim (a pending
// one is a claim in flight or left behind, and expires with its lease).
func (s *Shelf) Holders(ctx context.Context, p Pair) (username, email []string, err error) {
	return bothHolders(p, func(kind, key string) ([]string, error) {
		cl, err := s.claims.Lookup(ctx, domain.ClaimKind(kind), key)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, err
		case cl.State != domain.ClaimCommitted:
			return nil, nil
		}
		return []string{cl.Owner}, nil
	})
}

// liveOwners stands for the accounts: every claimant exists while the
// benchmark runs and holds what it committed, so a committed claim is
// always taken.
type liveOwners struct{}

func (liveOwners) Holder(context.Context, domain.ClaimKind, string, string) (exists, holds bool, version int, err error) {
	return true, true, 0, nil
}

// quietLog drops the claimer's warnings (a release that failed; its lease
// frees the key).
type quietLog struct{}

func (quietLog) Warn(context.Context, string, ...string) {}
