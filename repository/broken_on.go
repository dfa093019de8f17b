//go:build brokenclaims

package repository

// settleAmbiguous is false in the deliberately broken build (tag
// brokenclaims): every ambiguous answer is reported unknown at once,
// unread, and (domain.undoUnknownActivation) a signup then releases its
// claims, although its account may be active. The nemesis builds the API
// this way once to show its checker catches it (make
// test-nemesis-broken); nothing else does.
const settleAmbiguous = false
