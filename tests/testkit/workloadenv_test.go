package testkit

import (
	"strings"
	"testing"
	"time"

	"shelf/internal/config"
)

// TestWorkloadEnvPassesTheAPIsChecks: the settings the storms, the
// nemesis and the two-region run give their API processes pass the API's
// own start-up checks (a process refused at start would fail those runs
// only after their cluster came up).
func TestWorkloadEnvPassesTheAPIsChecks(t *testing.T) {
	t.Parallel()
	vars := map[string]string{}
	for _, kv := range WorkloadEnv(5 * time.Second) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	if _, err := config.Load(func(k string) string { return vars[k] }); err != nil {
		t.Fatal(err)
	}
}
