//go:build integration

package e2e

import (
	"os"
	"testing"

	"shelf/tests/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		if binDir != "" {
			_ = os.RemoveAll(binDir)
		}
	})
}
