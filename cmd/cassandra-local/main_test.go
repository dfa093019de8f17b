package main

import (
	"slices"
	"testing"
)

// TestDataCentres: make cluster-up DCS=n [PER_DC=m] lays the nodes out on
// addresses of their own per data centre; no DCS (or DCS=1 alone) is the
// three-node cluster, and nonsense is refused.
func TestDataCentres(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want [][]string
	}{
		{nil, nil},
		{[]string{"1"}, nil},
		{[]string{"2"}, [][]string{{"127.0.0.61"}, {"127.0.0.71"}}},
		{[]string{"2", "2"}, [][]string{{"127.0.0.61", "127.0.0.62"}, {"127.0.0.71", "127.0.0.72"}}},
		{[]string{"1", "2"}, [][]string{{"127.0.0.61", "127.0.0.62"}}},
	} {
		got, err := dataCentres(tc.args)
		if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal) || (got == nil) != (tc.want == nil) {
			t.Errorf("dataCentres(%v) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"0"}, {"4"}, {"two"}, {"2", "0"}, {"2", "1", "1"}} {
		if got, err := dataCentres(bad); err == nil {
			t.Errorf("dataCentres(%v) = %v, want an error", bad, got)
		}
	}
}
