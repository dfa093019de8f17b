//go:build integration

package repository_test

import (
	"testing"
	"time"

	"shelf/internal/testkit"
	"shelf/repository"
)

// TestAttemptsKeepTheContract: throttle_attempts keeps the contract the
// throttle and its fake (memstore.Attempts) count on: oldest first, and a
// removal that a late write of the same attempt cannot undo (the delete is
// at the write's timestamp + 1).
func TestAttemptsKeepTheContract(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	testkit.CheckAttemptStore(t, repository.NewAttempts(db), key("throttle"), time.Now())
}
