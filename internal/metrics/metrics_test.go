package metrics

import "testing"

// TestStatementKind: a statement's kind is its verb in any case, "lwt" for
// a write with IF (in any case), "other" for anything else.
func TestStatementKind(t *testing.T) {
	t.Parallel()
	for stmt, want := range map[string]string{
		"SELECT id FROM users WHERE id = ?":                      "select",
		"  select id FROM users WHERE id = ?":                    "select",
		"INSERT INTO usernames (k) VALUES (?) IF NOT EXISTS":     "lwt",
		"INSERT INTO sessions (id) VALUES (?) USING TTL 60":      "insert",
		"UPDATE users SET v = ? WHERE id = ? IF version = ?":     "lwt",
		"update users set v = ? where id = ? if version = ?":     "lwt",
		"UPDATE users SET v = ? WHERE id = ?":                    "update",
		"UPDATE users SET modified = ? WHERE id = ? -- IFFY":     "update",
		"DELETE FROM claims WHERE k = ? IF owner = ?":            "lwt",
		"DELETE FROM sessions WHERE id = ?":                      "delete",
		"BEGIN BATCH INSERT INTO a (k) VALUES (?); APPLY BATCH;": "other",
		"CREATE TABLE IF NOT EXISTS t (k text PRIMARY KEY)":      "other",
		"": "other",
	} {
		if got := StatementKind(stmt); got != want {
			t.Errorf("StatementKind(%q) = %q, want %q", stmt, got, want)
		}
	}
}
