//go:build !brokenlwt

package repository

// checkThenAct is false: claims are taken and committed with compare-and-
// sets. Only the deliberately broken build of the nemesis's self-check
// sets it.
const checkThenAct = false
