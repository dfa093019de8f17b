//go:build brokenclaims

package domain

// UndoOnUnknown is true in the deliberately broken build (tag
// brokenclaims): a creation whose activation has an unknown outcome
// releases its claims (the bug issue 10 found with a hung node), and so
// does a rename whose account update has one; the repository reports
// every ambiguous answer unknown, unread. The nemesis builds the API this
// way to show its checker catches it (make test-nemesis-broken); nothing
// else does.
const UndoOnUnknown = true
