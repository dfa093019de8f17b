//go:build integration

package e2e

import (
	"os"
	"testing"

	"shelf/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		if binDir != "" {
			_ = os.RemoveAll(binDir)
		}
	})
}
