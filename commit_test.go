package main

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Concurrent writes share commits, each answered after its own change is
// committed, with GOMAXPROCS 2 and 1 (a group committer can stall on one).
func TestCommit_ConcurrentWritesShareCommits(t *testing.T) {
	for _, procs := range []int{2, 1} {
		t.Run("GOMAXPROCS="+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			st := mustOpenStore(t)
			alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
			groupsBefore, writesBefore := st.commitStats.groups.Load(), st.commitStats.writes.Load()
			const writers, each = 32, 20
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						token := "t" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
						if err := st.addPushToken(alice.ID, pushToken{Kind: pushFCM, Token: token}); err != nil {
							t.Error(err)
							return
						}
						// Answered means committed: a fresh read sees it.
						tokens, err := st.pushTokens(alice.ID)
						if err != nil {
							t.Error(err)
							return
						}
						found := false
						for _, tok := range tokens {
							found = found || tok.Token == token
						}
						if !found {
							t.Errorf("token %s missing right after its write returned", token)
						}
					}
				})
			}
			wg.Wait()
			groups, writes := st.commitStats.groups.Load()-groupsBefore, st.commitStats.writes.Load()-writesBefore
			t.Logf("%d writes in %d commits (%.1f a commit)", writes, groups, float64(writes)/float64(groups))
			if writes != writers*each {
				t.Errorf("writes: got %d, want %d", writes, writers*each)
			}
			if groups >= writes {
				t.Errorf("commits: got %d for %d concurrent writes, want fewer (shared)", groups, writes)
			}
		})
	}
}

func TestCommit_AfterCloseFailsInsteadOfHanging(t *testing.T) {
	st, err := openStore(t.TempDir()+"/z.db", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if err := st.addPushToken(1, pushToken{Kind: pushFCM, Token: "x"}); err != errStoreClosed {
		t.Errorf("write after close: got %v, want errStoreClosed", err)
	}
}
