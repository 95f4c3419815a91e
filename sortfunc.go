package main

import "sort"

// sortFunc sorts s by cmp exactly as slices.SortFunc does: sort.Slice runs
// the same pattern-defeating quicksort with the same comparisons, so even
// equal elements end in the same order. It exists for the binary's size:
// every slices.SortFunc on a struct type of its own compiles a copy of the
// whole sort (about 20 KB of code and line tables each), where sort.Slice
// is one copy for every element type. Use it, not slices.SortFunc, in the
// core package.
func sortFunc[E any](s []E, cmp func(a, b E) int) {
	sort.Slice(s, func(i, j int) bool { return cmp(s[i], s[j]) < 0 })
}

// sortStableFunc is slices.SortStableFunc through sort.SliceStable, for
// the same reason.
func sortStableFunc[E any](s []E, cmp func(a, b E) int) {
	sort.SliceStable(s, func(i, j int) bool { return cmp(s[i], s[j]) < 0 })
}
