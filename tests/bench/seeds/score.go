package seeds

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Round is what one round's claimants came to: each claimant's belief and
// error, in the order of Claimants.
type Round struct {
	Pair      Pair
	Claimants []string
	Won       []Won
	Errs      []error
}

// Verdict is what went wrong in a round, judged from what the claimants
// believe.
type Verdict struct {
	// Duplicate: more than one claimant believes it holds the username, or
	// the email (U1).
	Duplicate bool
	// Split: one claimant believes it holds the username but not the
	// email while another believes it holds the email (U2).
	Split bool
	// FalseRejection: no claimant believes it holds both, although the
	// pair was free.
	FalseRejection bool
}

// Verdict judges the round from the claimants' beliefs.
func (r Round) Verdict() Verdict {
	var v Verdict
	users, emails := r.believers()
	v.Duplicate = len(users) > 1 || len(emails) > 1
	for i, w := range r.Won {
		for j, o := range r.Won {
			if i != j && (w.Username && !w.Email && o.Email || w.Email && !w.Username && o.Username) {
				v.Split = true
			}
		}
	}
	v.FalseRejection = !slices.ContainsFunc(r.Won, func(w Won) bool { return w.Username && w.Email })
	return v
}

// believers lists the claimants that believe they hold each key.
func (r Round) believers() (users, emails []string) {
	for i, w := range r.Won {
		if w.Username {
			users = append(users, r.Claimants[i])
		}
		if w.Email {
			emails = append(emails, r.Claimants[i])
		}
	}
	return users, emails
}

// DBVerdict is what the database says afterwards.
type DBVerdict struct {
	// Disagrees: the holders the database shows for a key are not exactly
	// the claimants that believe they hold it (someone believes a key it
	// does not hold, or holds one it believes it lost).
	Disagrees bool
	// Split: the username's and the email's rows name different holders.
	Split bool
}

// DBVerdict compares the holders read from the database with the beliefs.
func (r Round) DBVerdict(users, emails []string) DBVerdict {
	believedUsers, believedEmails := r.believers()
	return DBVerdict{
		Disagrees: !sameSet(users, believedUsers) || !sameSet(emails, believedEmails),
		Split:     len(users) > 0 && len(emails) > 0 && !sameSet(users, emails),
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Cell is one line of the table: a pattern at one concurrency, with or
// without the nemesis.
type Cell struct {
	Pattern   string
	Claimants int
	// Hangs is how many times the nemesis hung a node during the rounds;
	// -1 without the nemesis.
	Hangs           int
	Rounds          int
	Duplicates      int
	Splits          int
	FalseRejections int
	// Errors counts claim attempts that returned an error, of Attempts.
	Errors   int
	Attempts int
	Elapsed  time.Duration
	// Latencies are the durations of every claim attempt.
	Latencies []time.Duration
	// DBChecked is false when the database could not be read afterwards.
	DBChecked   bool
	DBDisagrees int
	DBSplits    int
}

// Add counts one round.
func (c *Cell) Add(r Round) {
	c.Rounds++
	v := r.Verdict()
	c.Duplicates += b2i(v.Duplicate)
	c.Splits += b2i(v.Split)
	c.FalseRejections += b2i(v.FalseRejection)
	c.Attempts += len(r.Claimants)
	for _, err := range r.Errs {
		c.Errors += b2i(err != nil)
	}
}

// AddDB counts one round's check of the database.
func (c *Cell) AddDB(v DBVerdict) {
	c.DBDisagrees += b2i(v.Disagrees)
	c.DBSplits += b2i(v.Split)
}

// P99 is the 99th percentile of the claim attempts' durations.
func (c *Cell) P99() time.Duration {
	if len(c.Latencies) == 0 {
		return 0
	}
	l := slices.Clone(c.Latencies)
	slices.Sort(l)
	return l[(len(l)*99+99)/100-1]
}

// PairsPerSecond is how many rounds (pairs decided) the cell finished per
// second of wall time.
func (c *Cell) PairsPerSecond() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Rounds) / c.Elapsed.Seconds()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Table renders the cells as a markdown table.
func Table(cells []Cell) string {
	var b strings.Builder
	b.WriteString("| pattern | nemesis (hangs) | claimants | rounds | duplicates | splits | false rejections | errors / attempts | pairs/s | p99 claim | db ≠ belief | db splits |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range cells {
		nemesis := "no"
		if c.Hangs >= 0 {
			nemesis = fmt.Sprintf("yes (%d)", c.Hangs)
		}
		db, dbSplits := "-", "-"
		if c.DBChecked {
			db, dbSplits = fmt.Sprint(c.DBDisagrees), fmt.Sprint(c.DBSplits)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d / %d | %.1f | %s | %s | %s |\n",
			c.Pattern, nemesis, c.Claimants, c.Rounds, c.Duplicates, c.Splits, c.FalseRejections,
			c.Errors, c.Attempts, c.PairsPerSecond(), formatMS(c.P99()), db, dbSplits)
	}
	return b.String()
}

// formatMS prints a duration in milliseconds, without decimals once it is
// long enough for them not to matter.
func formatMS(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms >= 100 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}
