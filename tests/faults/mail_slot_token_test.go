package faults

import (
	"testing"

	"shelf/tests/memstore"
)

// TestAFailedTokenWriteDoesNotSpendTheHoursMailUnsent: the mail budget
// is 3 slots. A stranger asks for three resets of ann's address while
// the node is loaded: each mail takes its slot, then the write of its
// token fails once. The mail was given up there, its slot held for the
// hour with nothing sent, so the hour's slots were spent with nothing
// in ann's mailbox and her own reset was refused for the hour. The
// token is now written again, a new one each time (one written unseen
// is a token nobody holds), before the mail is given up.
func TestAFailedTokenWriteDoesNotSpendTheHoursMailUnsent(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.FailBefore, memstore.LoseAnswer} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			resetsWithAFaultEach(t, "tokens.create", fault)
		})
	}
}
