//go:build !brokenclaims

package repository

// settleAmbiguous is true: an ambiguous answer is settled by reading the
// row back (DB.execOnce). Only the deliberately broken build of the
// nemesis's self-check clears it.
const settleAmbiguous = true
