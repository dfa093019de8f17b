package memstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"shelf/domain/accounts"
)

// Factors keeps second factors as repository.Factors does: one partition
// per account, every write a compare-and-set of one row decided when it
// lands; a pending factor is gone once its TTL has passed on the store's
// clock (the exact TTL: the repository's is whole seconds, rounded down),
// a confirmed one never.
type Factors struct{ s *Store }

var _ accounts.FactorStore = (*Factors)(nil)

// Factors is the store as the accounts' factor store.
func (s *Store) Factors() *Factors { return &Factors{s} }

// factorPartition is one account's rows.
type factorPartition struct {
	factors map[string]pendingFactor
	set     accounts.RecoverySet
}

// pendingFactor is a factor and, while it is pending, when its row goes.
type pendingFactor struct {
	accounts.Factor
	expires time.Time
}

// factorPartition returns userID's rows, made when make is set. The
// caller holds s.mu.
func (s *Store) factorPartition(userID string, make bool) *factorPartition {
	if s.factors == nil {
		s.factors = map[string]*factorPartition{}
	}
	p := s.factors[userID]
	if p == nil && make {
		p = &factorPartition{factors: map[string]pendingFactor{}}
		s.factors[userID] = p
	}
	return p
}

// liveFactor returns the factor's row unless it is gone. The caller holds
// s.mu.
func (s *Store) liveFactor(userID, id string) (pendingFactor, bool) {
	p := s.factorPartition(userID, false)
	if p == nil {
		return pendingFactor{}, false
	}
	f, ok := p.factors[id]
	if ok && !f.Confirmed() && !s.now.Before(f.expires) {
		delete(p.factors, id)
		return pendingFactor{}, false
	}
	return f, ok
}

// Read reads the account's factors, by id, and its recovery set.
func (f *Factors) Read(_ context.Context, userID string) ([]accounts.Factor, accounts.RecoverySet, error) {
	var out []accounts.Factor
	set := accounts.RecoverySet{UserID: userID}
	_, err := f.s.call("factors.read", false, func() (bool, error) {
		p := f.s.factorPartition(userID, false)
		if p == nil {
			return true, nil
		}
		for _, id := range slices.Sorted(maps.Keys(p.factors)) {
			if r, ok := f.s.liveFactor(userID, id); ok {
				out = append(out, r.Factor)
			}
		}
		if p.set.Generation != "" {
			set = p.set
			set.Codes = slices.Clone(p.set.Codes)
			set.Used = maps.Clone(p.set.Used)
		}
		return true, nil
	})
	if set.Used == nil {
		set.Used = map[string]string{}
	}
	return out, set, err
}

// Begin inserts a pending factor if its row does not exist.
func (f *Factors) Begin(_ context.Context, fac accounts.Factor, ttl time.Duration) error {
	applied, err := f.s.call("factors.begin", true, func() (bool, error) {
		if _, ok := f.s.liveFactor(fac.UserID, fac.ID); ok {
			return false, nil
		}
		fac.ConfirmedAt, fac.LastStep, fac.LastUsedAt = time.Time{}, 0, time.Time{}
		f.s.factorPartition(fac.UserID, true).factors[fac.ID] = pendingFactor{Factor: fac, expires: f.s.now.Add(ttl)}
		return true, nil
	})
	if err == nil && !applied {
		return errors.New("memstore: factors.begin: row exists")
	}
	return err
}

// Confirm makes the factor permanent, with fac.Sealed, if it is pending
// with pending.
func (f *Factors) Confirm(_ context.Context, fac accounts.Factor, pending string) (bool, error) {
	return f.s.call("factors.confirm", true, func() (bool, error) {
		r, ok := f.s.liveFactor(fac.UserID, fac.ID)
		if !ok || r.Sealed != pending || r.Confirmed() {
			return false, nil
		}
		f.s.factorPartition(fac.UserID, true).factors[fac.ID] = pendingFactor{Factor: fac}
		return true, nil
	})
}

// UseStep moves the factor's last step on if the stored one is earlier
// (a pending factor has none: not applied).
func (f *Factors) UseStep(_ context.Context, fac accounts.Factor, step int64, at time.Time) (bool, error) {
	return f.s.call("factors.use_step", true, func() (bool, error) {
		r, ok := f.s.liveFactor(fac.UserID, fac.ID)
		if !ok || !r.Confirmed() || r.LastStep >= step {
			return false, nil
		}
		r.LastStep, r.LastUsedAt = step, at
		f.s.factorPartition(fac.UserID, true).factors[fac.ID] = r
		return true, nil
	})
}

// Touch records a use of the confirmed factor if it stands with the
// Sealed read (a pending row, or one gone, is not touched).
func (f *Factors) Touch(_ context.Context, fac accounts.Factor, at time.Time) (bool, error) {
	return f.s.call("factors.touch", true, func() (bool, error) {
		r, ok := f.s.liveFactor(fac.UserID, fac.ID)
		if !ok || !r.Confirmed() || r.Sealed != fac.Sealed {
			return false, nil
		}
		r.LastUsedAt = at
		f.s.factorPartition(fac.UserID, true).factors[fac.ID] = r
		return true, nil
	})
}

// Remove deletes a factor if it exists.
func (f *Factors) Remove(_ context.Context, userID, id string) (bool, error) {
	return f.s.call("factors.remove", true, func() (bool, error) {
		if _, ok := f.s.liveFactor(userID, id); !ok {
			return false, nil
		}
		delete(f.s.factorPartition(userID, true).factors, id)
		return true, nil
	})
}

// RemovePending deletes the enrolment while it is not confirmed; a row
// gone meets the condition, as Cassandra's null columns do.
func (f *Factors) RemovePending(_ context.Context, userID, id string) (bool, error) {
	return f.s.call("factors.remove_pending", true, func() (bool, error) {
		r, ok := f.s.liveFactor(userID, id)
		if ok && r.Confirmed() {
			return false, nil
		}
		if p := f.s.factorPartition(userID, false); p != nil {
			delete(p.factors, id)
		}
		return true, nil
	})
}

// SetRecovery writes set in place of generation prev.
func (f *Factors) SetRecovery(_ context.Context, set accounts.RecoverySet, prev string) (bool, error) {
	return f.s.call("factors.set_recovery", true, func() (bool, error) {
		p := f.s.factorPartition(set.UserID, true)
		if p.set.Generation != prev {
			return false, nil
		}
		set.Codes, set.Used = slices.Clone(set.Codes), map[string]string{}
		p.set = set
		return true, nil
	})
}

// UseRecovery marks a code used if the set is still set's generation and
// the code unused.
func (f *Factors) UseRecovery(_ context.Context, set accounts.RecoverySet, hash, useID string) (bool, error) {
	return f.s.call("factors.use_recovery", true, func() (bool, error) {
		p := f.s.factorPartition(set.UserID, false)
		if p == nil || p.set.Generation == "" || p.set.Generation != set.Generation {
			return false, nil
		}
		if _, used := p.set.Used[hash]; used {
			return false, nil
		}
		if p.set.Used == nil {
			p.set.Used = map[string]string{}
		}
		p.set.Used[hash] = useID
		return true, nil
	})
}

// RemoveRecovery deletes the set if it is still generation gen.
func (f *Factors) RemoveRecovery(_ context.Context, userID, gen string) error {
	_, err := f.s.call("factors.remove_recovery", true, func() (bool, error) {
		p := f.s.factorPartition(userID, false)
		if p == nil || p.set.Generation != gen {
			return false, nil
		}
		p.set = accounts.RecoverySet{}
		return true, nil
	})
	return err
}
