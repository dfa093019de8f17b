//go:build !brokenclaims

package domain

// undoUnknownActivation is false: a creation whose activation has an
// unknown outcome keeps its claims (see Claimer.Create). Only the
// deliberately broken build of the nemesis's self-check sets it.
const undoUnknownActivation = false
