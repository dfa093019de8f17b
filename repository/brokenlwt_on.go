//go:build brokenlwt

package repository

// checkThenAct is true in the second deliberately broken build (tag
// brokenlwt): a claim is taken by reading the key and, when nobody holds
// it, writing it with a plain INSERT, and committed with a plain UPDATE,
// the gist's check-then-act without a compare-and-set. Two signups racing
// for a name then both win. The nemesis builds the API this way to show
// its checker catches duplicates (make test-nemesis-broken BROKEN=lwt);
// nothing else does.
const checkThenAct = true
