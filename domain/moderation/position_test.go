package moderation

import "testing"

// TestParsePosition: a position names its phase; a bare token is one of
// the accounts phase; an unknown phase is refused rather than read as the
// accounts'.
func TestParsePosition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Position
		bad  bool
	}{
		{in: "", want: Position{Phase: PhaseAccounts}},
		{in: "-42", want: Position{Phase: PhaseAccounts, At: "-42"}},
		{in: "accounts:7", want: Position{Phase: PhaseAccounts, At: "7"}},
		{in: "lookups:-4611686018427387904", want: Position{Phase: PhaseLookups, At: "-4611686018427387904"}},
		{in: "list:", want: Position{Phase: PhaseList}},
		{in: "buckets:1", bad: true},
	} {
		got, err := ParsePosition(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParsePosition(%q) = %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
		if err == nil && tc.in != "" && tc.in != "-42" && got.String() != tc.in {
			t.Errorf("%+v is written %q, read from %q", got, got.String(), tc.in)
		}
	}
}
