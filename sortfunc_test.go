package main

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortFunc and sortStableFunc must leave a slice exactly as slices.SortFunc
// and slices.SortStableFunc do, ties included: callers were moved to them
// only for the binary's size.
func TestSortFunc_OrdersAsSlicesDoesTiesIncluded(t *testing.T) {
	type item struct{ key, seq int }
	byKey := func(a, b item) int { return cmp.Compare(a.key, b.key) }
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 11, 12, 13, 50, 257, 1000, 5000} {
		for _, keys := range []int{1, 3, n/2 + 1, 4 * n} {
			in := make([]item, n)
			for i := range in {
				in[i] = item{r.IntN(keys + 1), i}
			}
			want, got := slices.Clone(in), slices.Clone(in)
			slices.SortFunc(want, byKey)
			sortFunc(got, byKey)
			if !slices.Equal(got, want) {
				t.Fatalf("sortFunc, n=%d keys=%d: got %v, want %v", n, keys, got, want)
			}
			want, got = slices.Clone(in), slices.Clone(in)
			slices.SortStableFunc(want, byKey)
			sortStableFunc(got, byKey)
			if !slices.Equal(got, want) {
				t.Fatalf("sortStableFunc, n=%d keys=%d: got %v, want %v", n, keys, got, want)
			}
		}
	}
}
