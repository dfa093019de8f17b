//go:build !brokenclaims

package domain

// UndoOnUnknown is false: a write of unknown outcome undoes nothing (a
// creation keeps its claims, a rename its new claims). Only the
// deliberately broken build of the nemesis's self-check sets it.
const UndoOnUnknown = false
