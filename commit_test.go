package main

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
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

// A receiver of committed changes that is slow (a fan-out to thousands of
// queues) holds only the writer whose change it is handing on: every
// other write still commits. The sender waits for its own change to be
// handed on, and its events then come in commit order.
func TestCommit_SlowChangeReceiverHoldsNoOtherWriter(t *testing.T) {
	st := mustOpenStore(t)
	alice, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	ch := mustCreateChannel(t, st, "general", false)
	mustSubscribe(t, st, alice, "general")

	release, holding := make(chan struct{}), make(chan struct{}, 2)
	var mu sync.Mutex
	var heard []uint64
	st.hooks.Store(&storeHooks{
		changes: func(change any, _ func()) {
			if m, ok := change.(messageSent); ok {
				holding <- struct{}{}
				<-release
				mu.Lock()
				heard = append(heard, m.ID)
				mu.Unlock()
			}
		},
		listening: func(uint64) (bool, uint64) { return false, 0 },
	})
	sent := make(chan uint64, 2)
	for range 2 {
		go func() {
			m, err := st.sendMessage(alice, channelRef{ID: ch.ID}, "t", "hello", "test")
			if err != nil {
				t.Error(err)
			}
			sent <- m.ID
		}()
	}
	<-holding // the receiver is holding the first send's change
	other := make(chan error, 1)
	go func() { other <- st.addPushToken(alice.ID, pushToken{Kind: pushFCM, Token: "t"}) }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatalf("addPushToken: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a write waited for the receiver of another write's change")
	}
	select {
	case id := <-sent:
		t.Fatalf("send %d returned before its change was handed on", id)
	default:
	}
	close(release)
	first, second := <-sent, <-sent
	mu.Lock()
	defer mu.Unlock()
	if want := []uint64{min(first, second), max(first, second)}; !slices.Equal(heard, want) {
		t.Errorf("changes heard: got %v, want %v (commit order)", heard, want)
	}
}
