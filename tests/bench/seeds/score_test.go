package seeds

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	t.Parallel()
	both, user, email, none := Won{true, true}, Won{Username: true}, Won{Email: true}, Won{}
	for _, tc := range []struct {
		name string
		won  []Won
		want Verdict
	}{
		{"one winner", []Won{none, both, none}, Verdict{}},
		{"alone", []Won{both}, Verdict{}},
		{"two winners", []Won{both, both}, Verdict{Duplicate: true}},
		{"username to one, email to another", []Won{user, email}, Verdict{Split: true, FalseRejection: true}},
		{"winner and a username duplicate", []Won{both, user}, Verdict{Duplicate: true, Split: true}},
		{"half a pair", []Won{user, none}, Verdict{FalseRejection: true}},
		{"nobody", []Won{none, none}, Verdict{FalseRejection: true}},
	} {
		r := Round{Claimants: []string{"a", "b", "c"}[:len(tc.won)], Won: tc.won, Errs: make([]error, len(tc.won))}
		if got := r.Verdict(); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDBVerdict(t *testing.T) {
	t.Parallel()
	r := Round{Claimants: []string{"a", "b"}, Won: []Won{{true, true}, {}}}
	for _, tc := range []struct {
		name          string
		users, emails []string
		want          DBVerdict
	}{
		{"as believed", []string{"a"}, []string{"a"}, DBVerdict{}},
		{"overwritten", []string{"b"}, []string{"a"}, DBVerdict{Disagrees: true, Split: true}},
		{"lost", nil, []string{"a"}, DBVerdict{Disagrees: true}},
		{"held twice", []string{"b", "a"}, []string{"a"}, DBVerdict{Disagrees: true, Split: true}},
	} {
		if got := r.DBVerdict(tc.users, tc.emails); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestCellAndTable(t *testing.T) {
	t.Parallel()
	c := Cell{Pattern: "p", Claimants: 2, Hangs: -1, DBChecked: true}
	c.Add(Round{Claimants: []string{"a", "b"}, Won: []Won{{true, true}, {true, true}}, Errs: []error{nil, errors.New("x")}})
	c.Add(Round{Claimants: []string{"a", "b"}, Won: []Won{{}, {}}, Errs: make([]error, 2)})
	c.Elapsed = time.Second
	for i := 1; i <= 100; i++ {
		c.Latencies = append(c.Latencies, time.Duration(i)*time.Millisecond)
	}
	if c.Duplicates != 1 || c.FalseRejections != 1 || c.Errors != 1 || c.Attempts != 4 {
		t.Fatalf("counted %+v", c)
	}
	if c.P99() != 99*time.Millisecond || c.PairsPerSecond() != 2 {
		t.Fatalf("p99 %v, pairs/s %v", c.P99(), c.PairsPerSecond())
	}
	if row := Table([]Cell{c}); !strings.Contains(row, "| p | no | 2 | 2 | 1 | 0 | 1 | 1 / 4 | 2.0 | 99.0 ms | 0 | 0 |") {
		t.Fatalf("table:\n%s", row)
	}
}
