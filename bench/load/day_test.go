package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func testDay(t *testing.T, people int, seed uint64) dayConfig {
	t.Helper()
	rates, err := parseDayRates("")
	if err != nil {
		t.Fatal(err)
	}
	return dayConfig{people: people, minutes: 1, rates: rates, seed: seed, ramp: 30 * time.Second, registerTimeout: 10 * time.Second}
}

// The same configuration and seed plan the same organisation and the same
// requests at the same times; another seed plans another day.
func TestDaySchedule_SameSeedSameDay(t *testing.T) {
	a, b := newDaySchedule(testDay(t, 300, 7)), newDaySchedule(testDay(t, 300, 7))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two schedules of seed 7 differ: %d and %d requests", len(a.day), len(b.day))
	}
	c := newDaySchedule(testDay(t, 300, 8))
	if reflect.DeepEqual(a.day, c.day) || reflect.DeepEqual(a.org, c.org) {
		t.Error("seeds 7 and 8: got the same day, want different ones")
	}
}

// The schedule sends what the rates say, in time order within the day:
// presence once a minute from everyone, messages and DMs near their
// rates, about a tenth of the channel messages with a mention of another
// member, a reaction on every 10th message by one of its recipients and
// an edit of every 50th by its sender, each after the message; every
// person is in 10 channels, the first 5 holding everyone.
func TestDaySchedule_FollowsTheRates(t *testing.T) {
	c := testDay(t, 200, 1)
	s := newDaySchedule(c)
	for ch := range dayEveryoneChannels {
		if len(s.org.members[ch]) != c.people {
			t.Errorf("channel %d: got %d members, want everyone (%d)", ch, len(s.org.members[ch]), c.people)
		}
	}
	for p, mine := range s.org.channelsOf {
		if len(slices.Compact(slices.Clone(mine))) != dayChannelsPerPerson {
			t.Fatalf("person %d: in channels %v, want %d different ones", p, mine, dayChannelsPerPerson)
		}
	}
	if len(s.ramp) != 2*c.people {
		t.Errorf("ramp: got %d registrations, want a tab and a phone for each of %d people", len(s.ramp), c.people)
	}
	for _, a := range s.ramp {
		if a.at < 0 || a.at >= c.ramp {
			t.Fatalf("a registration at %v, want within the ramp of %v", a.at, c.ramp)
		}
	}
	count := map[opKind]int{}
	mentions := 0
	sentAt := map[int32]time.Duration{}
	for i, a := range s.day {
		count[a.kind]++
		if a.at < 0 || a.at >= c.length() || (i > 0 && a.at < s.day[i-1].at) {
			t.Fatalf("request %d at %v: want in time order within %v", i, a.at, c.length())
		}
		switch a.kind {
		case opSend:
			sentAt[a.message] = a.at
			if !slices.Contains(s.org.members[a.channel], a.person) {
				t.Fatalf("person %d sends to channel %d, which they are not in", a.person, a.channel)
			}
			if a.other >= 0 {
				mentions++
				if a.other == a.person || !slices.Contains(s.org.members[a.channel], a.other) {
					t.Fatalf("message %d mentions %d: want another member of channel %d", a.message, a.other, a.channel)
				}
			}
		case opDM:
			sentAt[a.message] = a.at
			if a.other == a.person || a.other < 0 {
				t.Fatalf("DM from %d to %d: want two people", a.person, a.other)
			}
		case opReaction, opEdit:
			m := s.messages[a.message]
			every := map[opKind]int{opReaction: c.rates.reactionEvery, opEdit: c.rates.editEvery}[a.kind]
			if at, ok := sentAt[a.message]; !ok || a.at < at+2*time.Second || int(a.message)%every != every-1 {
				t.Fatalf("%s on message %d at %v: want on every %dth message, 2 s or more after it", opNames[a.kind], a.message, a.at, every)
			}
			if a.kind == opEdit && a.person != m.sender || a.kind == opReaction && !slices.Contains(s.recipients(m), a.person) {
				t.Fatalf("%s on message %d by person %d: want its sender (edit) or a recipient (reaction)", opNames[a.kind], a.message, a.person)
			}
		}
	}
	if count[opPresence] != c.people {
		t.Errorf("presence: got %d reports in a minute, want one from each of %d people", count[opPresence], c.people)
	}
	near := func(kind opKind, want float64) {
		if got := float64(count[kind]); got < want*0.85 || got > want*1.15 {
			t.Errorf("%s: got %.0f in a minute, want about %.0f", opNames[kind], got, want)
		}
	}
	near(opSend, c.rates.messages*60)
	near(opDM, c.rates.dms*60)
	near(opRead, c.rates.reads*60)
	near(opMark, c.rates.marks*60)
	near(opTyping, c.rates.typing*60)
	if share := float64(mentions) / float64(count[opSend]); share < 0.07 || share > 0.13 {
		t.Errorf("mentions: got %.1f%% of channel messages, want about 10%%", share*100)
	}
	if len(s.messages) != count[opSend]+count[opDM] {
		t.Errorf("got %d messages planned for %d sends", len(s.messages), count[opSend]+count[opDM])
	}
	// The last 20 s may leave some out: their message came too late.
	if n, most := count[opReaction], len(s.messages)/10; n > most || n < most*2/3 {
		t.Errorf("reactions: got %d, want about one per 10 of %d messages", n, len(s.messages))
	}
}

// A message event a tab never received is missing; one it received twice
// counts once (and as a duplicate); the events of a message whose send
// failed, or that the day did not send, count for nothing; the latency
// is from the send to the first receipt.
func TestCountDeliveries_NeverDeliveredIsMissingAndDuplicateCountsOnce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sent := []sentMessage{
		{id: 11, at: t0, recipients: []int32{0, 1, 2}},   // a channel of three
		{id: 12, at: at(100), recipients: []int32{1, 2}}, // a DM
		{id: 0, at: at(200), recipients: []int32{0}},     // a send that failed
	}
	receipts := [][]receipt{
		{{11, at(30)}, {11, at(20)}}, // twice, the second receipt the earlier
		{{11, at(5)}, {12, at(150)}, {99, at(160)}},
		nil, // this tab got nothing
	}
	d := countDeliveries(sent, receipts)
	if d.expected != 5 || d.delivered != 3 || d.missing() != 2 || d.duplicates != 1 {
		t.Errorf("got expected %d, delivered %d, missing %d, duplicates %d; want 5, 3, 2, 1", d.expected, d.delivered, d.missing(), d.duplicates)
	}
	want := []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}
	if !slices.Equal(d.latencies, want) {
		t.Errorf("latencies: got %v, want %v", d.latencies, want)
	}
}

// -day-rates replaces the defaults it names and keeps the others; an
// unknown key or a negative rate is refused.
func TestParseDayRates_KeysGivenReplaceTheDefaults(t *testing.T) {
	r, err := parseDayRates("messages=40, presence=0s")
	if err != nil {
		t.Fatal(err)
	}
	if r.messages != 40 || r.presenceEvery != 0 || r.dms != 5 || r.reactionEvery != 10 || r.editEvery != 50 || r.mentions != 0.1 {
		t.Errorf("got %+v, want messages 40, no presence, the rest the defaults", r)
	}
	for _, bad := range []string{"letters=3", "dms=-1", "messages", "mentions=2", "edit-every=x"} {
		if _, err := parseDayRates(bad); err == nil || !strings.Contains(err.Error(), "-day-rates") {
			t.Errorf("%q: got %v, want an error naming -day-rates", bad, err)
		}
	}
}
