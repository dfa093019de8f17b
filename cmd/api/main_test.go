//go:build integration

package main

import (
	"testing"

	"shelf/tests/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
