package memstore

import (
	"time"

	"shelf/domain/moderation"
)

// ModerationAttempts is the store as the index of suspensions and
// unsuspensions in progress (moderation.AttemptIndex), written as
// repository.ModerationAttempts writes it (see dayIndex).
func (s *Store) ModerationAttempts() moderation.AttemptIndex { return s.modAttemptIndex() }

func (s *Store) modAttemptIndex() dayIndex[moderation.Attempt] {
	return dayIndex[moderation.Attempt]{s: s, table: &s.modAttempts, name: "moderation_attempts",
		key: func(a moderation.Attempt) string { return a.UserID + "|" + a.Tag },
		at:  func(a moderation.Attempt) time.Time { return a.At }}
}

// ModerationAttemptSnapshot lists the live entries, for checks.
func (s *Store) ModerationAttemptSnapshot() []moderation.Attempt {
	return s.modAttemptIndex().snapshot()
}
