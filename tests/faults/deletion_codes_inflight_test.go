package faults

import (
	"context"
	"sync"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// heldFactors is the factor store with two meeting points: a recovery
// set's write waits, once armed, until the deletion's job removes a
// factor (EndFactors, after its read), and that removal waits until the
// write has landed.
type heldFactors struct {
	*memstore.Factors
	armed            bool
	once             sync.Once
	atSet, go_, done chan struct{}
}

func (h *heldFactors) SetRecovery(ctx context.Context, s accounts.RecoverySet, prev string) (bool, error) {
	if !h.armed {
		return h.Factors.SetRecovery(ctx, s, prev)
	}
	close(h.atSet)
	<-h.go_
	defer close(h.done)
	return h.Factors.SetRecovery(ctx, s, prev)
}

func (h *heldFactors) Remove(ctx context.Context, userID, id string) (bool, error) {
	if h.armed {
		h.once.Do(func() { close(h.go_); <-h.done })
	}
	return h.Factors.Remove(ctx, userID, id)
}

// TestNewRecoveryCodesInFlightOutliveNoDeletion: ann asks for new
// recovery codes (her password and a code) and, while that request is
// slow, deletes her account (her password and the next code); the
// deletion's job reads her factors and set (EndFactors), then her new
// set lands in place of the one it read, then the job removes her factor
// and the set it read, which no longer stands. Her deleted account kept
// a recovery set (the hashes of codes her request showed her) for good,
// though a deletion leaves no factor or code of the account
// (TestADeletedAccountKeepsNoSecondFactor): the request, a grant, must
// check again at its end, or the job must not end on a set it did not
// remove.
func TestNewRecoveryCodesInFlightOutliveNoDeletion(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	h := &heldFactors{Factors: f.store.Factors(), atSet: make(chan struct{}), go_: make(chan struct{}), done: make(chan struct{})}
	f.rewire(func(_ *memstore.Store, c *accounts.Config) { c.Factors = h })
	wireDeletion(f.world)
	ctx := context.Background()
	pw := password
	h.armed = true
	codesErr := make(chan error, 1)
	go func() {
		_, err := f.svc.NewRecoveryCodes(ctx, as(f.ann), f.ann.ID, accounts.Proof{CurrentPassword: &pw, Code: f.code(t, 0)})
		codesErr <- err
	}()
	<-h.atSet
	if err := worked(f.life)(f.life.DeleteUser(ctx, as(f.ann), f.ann.ID, accounts.Proof{CurrentPassword: &pw, Code: f.code(t, 1)})); err != nil {
		t.Fatal(err)
	}
	t.Logf("the new codes' request answered %v", <-codesErr)
	factors, set, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(factors) > 0 || set.Generation != "" {
		t.Errorf("ann's deleted account keeps %d factors and a recovery set of %d codes", len(factors), len(set.Codes))
	}
}
