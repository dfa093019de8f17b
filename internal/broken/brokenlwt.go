//go:build brokenlwt

package broken

// The tag brokenlwt chooses the LWT build.
func init() { builds = append(builds, LWT) }
