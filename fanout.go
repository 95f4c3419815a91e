package main

import (
	"runtime"
	"time"
)

// Fan-out: how a committed change reaches the queues that hear it. An
// offer gives an event to its audience's queues, encoded once for all
// that get the same bytes (events.go: the queues and their polls); the
// queues' waiting polls are woken in order, paced by the wake slots; and
// when queues together hold too much, the idle ones make room (relieve).

// audience is who hears an event: every queue of the recipients, then of
// the others (told apart for a message's flags: its sender when not
// subscribed), then, with allPublic, every all_public_streams queue. A
// queue reached twice hears the event once.
type audience struct {
	recipients, others []uint64
	allPublic          bool
	// release, when set, lets the writer answer: once every queue has
	// the event, before their polls are woken; or, to more than
	// earlyReleaseRecipients recipients, once first's queues (the
	// writer's: the sender's) have it, before anyone else's.
	release        func()
	first          uint64
	firstRecipient bool // first is among the recipients
}

// earlyReleaseRecipients is the audience past which a writer does not
// wait for everyone's queues: a send to a channel of thousands answers
// once the sender's own queues have the message, and the rest follow in
// commit order. Below it the fan-out costs less than the send itself.
const earlyReleaseRecipients = 100

func usersAudience(userIDs ...uint64) audience { return audience{recipients: userIDs} }

// offer gives an event to its audience's queues that want its type; pick
// says what each queue holds of it (false: nothing), recipient whether
// the queue's user is among the recipients. Offers run one at a time, so
// pick may encode once per variant; it touches no storage. Each queue is
// locked only while the event is added, and its waiting polls are woken
// at once.
func (h *eventHub) offer(eventType string, to audience, pick func(q *eventQueue, recipient bool) (queuedEvent, bool)) {
	h.offerMu.Lock()
	defer h.offerMu.Unlock()
	h.offers++
	offer := h.offers
	var over, woken []*eventQueue
	give := func(q *eventQueue, recipient bool) {
		if q.offered == offer || !q.wants(eventType) {
			return
		}
		q.offered = offer
		e, ok := pick(q, recipient)
		if !ok || e.shared == nil {
			return
		}
		switch wake, fits := h.add(q, e); {
		case !fits:
			over = append(over, q)
		case wake:
			woken = append(woken, q)
		}
	}
	h.mu.RLock()
	if to.release != nil && len(to.recipients) > earlyReleaseRecipients {
		for _, q := range h.byUser[to.first] {
			give(q, to.firstRecipient)
		}
		to.release()
		to.release = nil
		runtime.Gosched() // the writer answers now, not after the fan-out
	}
	for _, id := range to.recipients {
		for _, q := range h.byUser[id] {
			give(q, true)
		}
	}
	for _, id := range to.others {
		for _, q := range h.byUser[id] {
			give(q, false)
		}
	}
	if to.allPublic {
		for _, q := range h.allPublic {
			give(q, false)
		}
	}
	h.mu.RUnlock()
	if to.release != nil && len(woken) > 0 {
		to.release()
		runtime.Gosched() // the writer answers now, before the woken polls'
	}
	h.wakeQueues(woken)
	h.removeDropped(over)
	h.relieve()
}

// add gives the event to the queue. It answers whether the queue's
// waiting polls are to be woken (wakeQueues), and false when the queue
// was over a bound and is now dropped: the caller takes it out of the
// index.
func (h *eventHub) add(q *eventQueue, e queuedEvent) (wake, fits bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped {
		return false, true // whoever dropped it removes it
	}
	wake, fits = h.enqueueLocked(q, e)
	if !fits {
		h.dropLocked(q)
	}
	return wake, fits
}

// wakeQueues wakes the waiting polls of the queues, in order, from a
// goroutine of its own that takes a wake slot for each: a fan-out to
// thousands of queues does not put thousands of goroutines at once
// between the processor and the next request.
func (h *eventHub) wakeQueues(queues []*eventQueue) {
	if len(queues) == 0 {
		return
	}
	h.wakeMu.Lock()
	defer h.wakeMu.Unlock()
	h.toWake = append(h.toWake, queues...)
	if !h.waking {
		h.waking = true
		go h.waker()
	}
}

// waker wakes the queues listed until there are none left.
func (h *eventHub) waker() {
	for {
		h.wakeMu.Lock()
		queues := h.toWake
		h.toWake = nil
		if len(queues) == 0 {
			h.waking = false
			h.wakeMu.Unlock()
			return
		}
		h.wakeMu.Unlock()
		for _, q := range queues {
			q.mu.Lock()
			parked := len(q.parked) > 0
			q.mu.Unlock()
			if parked {
				h.runJob(func() { h.answerParked(q) })
			}
			h.wakeSlots <- struct{}{}
			q.mu.Lock()
			q.wakeDue = false
			took := false
			if q.wake != nil && q.polls > len(q.parked) { // polls waiting in their handlers
				close(q.wake) // every waiting poll of the queue wakes
				q.wake = nil
				took, q.woken = !q.woken, true
			}
			if !took {
				<-h.wakeSlots
			}
			q.mu.Unlock()
		}
	}
}

// tell gives the same event to every queue of the audience that wants
// its type and that only accepts (nil: every one), encoded once.
func (h *eventHub) tell(eventType string, to audience, e event, only func(q *eventQueue) bool) {
	shared := encodeEvent(e)
	h.offer(eventType, to, func(q *eventQueue, _ bool) (queuedEvent, bool) {
		return queuedEvent{shared: shared}, only == nil || only(q)
	})
}

// publish offers an event to every queue that match accepts and that
// wants its type; build makes that queue's copy (nil skips the queue).
// It encodes for each queue: for the rare events of one user (their
// settings); fan-out goes through offer, and events for everyone
// through tellEveryone.
func (h *eventHub) publish(eventType string, match func(q *eventQueue) bool, build func(q *eventQueue) event) {
	h.everyQueue(eventType, func(q *eventQueue) *sharedEvent {
		if !match(q) {
			return nil
		}
		if e := build(q); e != nil {
			return encodeEvent(e)
		}
		return nil
	})
}

// tellEveryone gives every queue that wants its type one of the event's
// variants (a queue's key picks it), each encoded once.
func (h *eventHub) tellEveryone(eventType string, key func(q *eventQueue) int, variants ...event) {
	shared := make([]*sharedEvent, len(variants))
	for i, e := range variants {
		shared[i] = encodeEvent(e)
	}
	h.everyQueue(eventType, func(q *eventQueue) *sharedEvent {
		if key == nil {
			return shared[0]
		}
		return shared[key(q)]
	})
}

// everyQueue gives every queue that wants the event type what pick
// makes of it (nil: nothing).
func (h *eventHub) everyQueue(eventType string, pick func(q *eventQueue) *sharedEvent) {
	var over, woken []*eventQueue
	h.mu.RLock()
	for _, q := range h.queues {
		if !q.wants(eventType) {
			continue
		}
		if shared := pick(q); shared != nil {
			switch wake, fits := h.add(q, queuedEvent{shared: shared}); {
			case !fits:
				over = append(over, q)
			case wake:
				woken = append(woken, q)
			}
		}
	}
	h.mu.RUnlock()
	h.wakeQueues(woken)
	h.removeDropped(over)
	h.relieve()
}

// relieve has idle queues dropped, once something went over the total
// bound, on a goroutine of its own: it takes the index's lock, which no
// caller (a fan-out, a poll, the parked connections' watcher) may wait
// for. A scan runs at most once a second, so that a total that stays
// over the bound with nothing idle left does not rescan every queue for
// every event.
func (h *eventHub) relieve() {
	if !h.pressure.Load() || !h.relieving.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer h.relieving.Store(false)
		if wait := time.Second - time.Since(h.lastRelief); wait > 0 {
			time.Sleep(wait)
		}
		h.lastRelief = time.Now()
		h.pressure.Store(false)
		if !h.closed.Load() {
			h.dropIdle()
		}
	}()
}

// dropIdle drops idle queues that hold events, the longest unpolled
// first, while the total is over three quarters of its bound. A queue is
// idle when no poll waits on it and none reached it in
// queueInUseWindow; the queues in use keep theirs.
func (h *eventHub) dropIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	type idleQueue struct {
		q        *eventQueue
		lastPoll time.Time
	}
	var idle []idleQueue
	since := h.now().Add(-queueInUseWindow)
	for _, q := range h.queues {
		q.mu.Lock()
		if q.polls == 0 && q.lastPoll.Before(since) && len(q.events) > 0 {
			idle = append(idle, idleQueue{q, q.lastPoll})
		}
		q.mu.Unlock()
	}
	sortFunc(idle, func(a, b idleQueue) int { return a.lastPoll.Compare(b.lastPoll) })
	for _, c := range idle {
		if h.totalBytes.Load() <= h.totalBound*3/4 {
			return
		}
		c.q.mu.Lock()
		still := c.q.polls == 0 && !c.q.lastPoll.After(c.lastPoll) && !c.q.dropped // no poll came meanwhile
		c.q.mu.Unlock()
		if still {
			h.removeLocked(c.q)
			h.evicted.Add(1)
		}
	}
}

// enqueueLocked adds an event to a queue and answers whether its waiting
// polls are to be woken (it is not yet listed to be); q.mu is held. It
// answers false, adding nothing, when the queue has fallen too far
// behind: the caller drops it (its client re-registers).
func (h *eventHub) enqueueLocked(q *eventQueue, e queuedEvent) (wake, fits bool) {
	id := q.firstID + int64(len(q.events))
	size, held := e.size(id), queuedEventSize
	if e.shared.holders.Add(1) == 1 {
		held += len(e.shared.raw)
	}
	if len(q.events) >= maxEventsPerQueue || q.bytes+size > maxQueueBytes || h.totalBytes.Load()+int64(held) > h.totalBound+h.totalBound/4 {
		e.shared.holders.Add(-1)
		return false, false
	}
	q.events = append(q.events, e)
	q.bytes += size
	if h.totalBytes.Add(int64(held)) > h.totalBound {
		h.pressure.Store(true)
	}
	wake = (q.wake != nil || len(q.parked) > 0) && !q.wakeDue
	q.wakeDue = q.wakeDue || wake
	return wake, true
}
