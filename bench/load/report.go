package main

// The table the sweep prints.

import (
	"fmt"
	"slices"
	"time"
)

type row struct {
	name        string
	concurrency int
	result      result
	ceiling     *result // the ceiling this row is compared with, from the same round
	commits     groups  // zulite's commit groups during the row, for writes
}

// printTable prints each scenario's median over the rounds: of requests/s,
// p50, p99, the server's CPU time per request, and the ratio to the
// ceiling (each round's ratio is of two measurements moments apart, so
// the median of ratios is steadier than a ratio of medians). For the
// writes, the ceiling's and zulite's, it adds the commit groups: writes,
// time and pages written per commit.
func printTable(table [][]row) {
	fmt.Printf("median of %d rounds\n", len(table))
	fmt.Printf("%-42s %5s %8s %9s %9s %6s %10s  %s\n", "scenario", "conc", "req/s", "p50", "p99", "ratio", "server CPU", "commit groups")
	for i, r := range table[0] {
		pick := func(f func(row) float64) float64 {
			var v []float64
			for _, rows := range table {
				v = append(v, f(rows[i]))
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		ratio, commits := "", ""
		if r.ceiling != nil {
			ratio = fmt.Sprintf("%.2f", pick(func(r row) float64 { return r.result.rps / r.ceiling.rps }))
		}
		if r.commits.count > 0 {
			commits = fmt.Sprintf("%4.1f writes, %.2f ms, %4.1f pages",
				pick(func(r row) float64 { return r.commits.writes / r.commits.count }),
				pick(func(r row) float64 { return r.commits.seconds / r.commits.count * 1000 }),
				pick(func(r row) float64 { return r.commits.pages / r.commits.count }))
		}
		fmt.Printf("%-42s %5d %8.0f %7.3fms %7.3fms %6s %7.1f µs  %s\n", r.name, r.concurrency,
			pick(func(r row) float64 { return r.result.rps }),
			pick(func(r row) float64 { return ms(r.result.p50) }),
			pick(func(r row) float64 { return ms(r.result.p99) }), ratio,
			pick(func(r row) float64 { return float64(r.result.cpu) / float64(time.Microsecond) }), commits)
	}
	if len(table) > 1 {
		printRoundRatios(table)
	}
}

// printRoundRatios prints every round's ratio to its ceiling, round by
// round, and the lowest: a median can pass where a round falls short.
func printRoundRatios(table [][]row) {
	fmt.Printf("\nratio to the ceiling in each round (then the lowest)\n")
	for i, r := range table[0] {
		if r.ceiling == nil {
			continue
		}
		fmt.Printf("%-42s %5d ", r.name, r.concurrency)
		lowest := 0.0
		for j, rows := range table {
			ratio := rows[i].result.rps / rows[i].ceiling.rps
			if j == 0 || ratio < lowest {
				lowest = ratio
			}
			fmt.Printf(" %.2f", ratio)
		}
		fmt.Printf("   lowest %.2f\n", lowest)
	}
}
