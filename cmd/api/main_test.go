//go:build integration

package main

import (
	"testing"

	"shelf/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
