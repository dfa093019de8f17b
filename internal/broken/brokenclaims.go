//go:build brokenclaims

package broken

// The tag brokenclaims chooses the Claims build.
func init() { builds = append(builds, Claims) }
