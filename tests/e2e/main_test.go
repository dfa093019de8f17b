package e2e

import (
	"testing"

	"shelf/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
