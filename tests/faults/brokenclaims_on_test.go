//go:build brokenclaims

package faults

// brokenClaims: this run explores the deliberately broken build
// (accountRows, groupRows); it must fail.
const brokenClaims = true
