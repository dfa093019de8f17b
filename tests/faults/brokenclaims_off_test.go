//go:build !brokenclaims

package faults

// brokenClaims: the services write through the stores as they are.
const brokenClaims = false
