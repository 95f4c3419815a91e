package main

// The day mode (-day): a compressed working day of an organisation on the
// real zulite binary (issue 31). This file holds what the day is made of
// and how it is counted, without a server: the organisation (who is in
// which channel), the schedule every request is sent on (from the rates
// and the seed), the accounting of message events against the tabs that
// should have had them, and the table. dayrun.go runs it.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The organisation's shape: 50 channels, the first 5 of which everyone is
// in; each person is also in 5 of the other 45, chosen at random, so in
// 10; each channel's messages go to 10 topics.
const (
	dayChannels          = 50
	dayEveryoneChannels  = 5
	dayChannelsPerPerson = 10
	dayTopics            = 10
)

// dayRates are the day's rates (-day-rates): requests a second for the
// open-loop streams, a presence report from every person every
// presenceEvery, and a reaction and an edit per so many messages.
type dayRates struct {
	messages, dms, reads, marks, typing float64 // a second
	mentions                            float64 // the share of channel messages with an @-mention
	presenceEvery                       time.Duration
	reactionEvery, editEvery            int // a reaction per N messages, an edit per N
}

const defaultDayRates = "messages=20,dms=5,reads=10,marks=20,typing=5,mentions=0.1,presence=60s,reaction-every=10,edit-every=50"

// parseDayRates reads -day-rates: the defaults, with the keys given
// replaced.
func parseDayRates(s string) (dayRates, error) {
	r := dayRates{}
	for _, list := range []string{defaultDayRates, s} {
		for _, field := range strings.Split(list, ",") {
			field = strings.TrimSpace(field)
			if field == "" {
				continue
			}
			key, value, ok := strings.Cut(field, "=")
			if !ok {
				return r, fmt.Errorf("-day-rates: %q is not key=value", field)
			}
			var err error
			rate := func(into *float64) {
				var v float64
				if v, err = strconv.ParseFloat(value, 64); err == nil && (v < 0 || math.IsInf(v, 0) || math.IsNaN(v)) {
					err = errors.New("not a rate")
				}
				*into = v
			}
			every := func(into *int) {
				var v int
				if v, err = strconv.Atoi(value); err == nil && v < 0 {
					err = errors.New("negative")
				}
				*into = v
			}
			switch key {
			case "messages":
				rate(&r.messages)
			case "dms":
				rate(&r.dms)
			case "reads":
				rate(&r.reads)
			case "marks":
				rate(&r.marks)
			case "typing":
				rate(&r.typing)
			case "mentions":
				if rate(&r.mentions); err == nil && r.mentions > 1 {
					err = errors.New("a share is at most 1")
				}
			case "presence":
				if r.presenceEvery, err = time.ParseDuration(value); err == nil && r.presenceEvery < 0 {
					err = errors.New("negative")
				}
			case "reaction-every":
				every(&r.reactionEvery)
			case "edit-every":
				every(&r.editEvery)
			default:
				return r, fmt.Errorf("-day-rates: unknown key %q (the keys: %s)", key, defaultDayRates)
			}
			if err != nil {
				return r, fmt.Errorf("-day-rates: %s: %v", field, err)
			}
		}
	}
	return r, nil
}

func (r dayRates) String() string {
	presence := "no presence"
	if r.presenceEvery > 0 {
		presence = "presence from everyone every " + r.presenceEvery.String()
	}
	return fmt.Sprintf("channel messages %g/s (%g%% with a mention), DMs %g/s, narrow reads %g/s, read marks %g/s, typing %g/s, %s, a reaction per %d messages, an edit per %d",
		r.messages, r.mentions*100, r.dms, r.reads, r.marks, r.typing, presence, r.reactionEvery, r.editEvery)
}

// dayConfig is one day: who, how long, how busy, and the seed that makes
// the organisation and the schedule.
type dayConfig struct {
	people          int
	minutes         float64
	rates           dayRates
	seed            uint64
	ramp            time.Duration // the tabs and phones register spread over this, before the day
	registerTimeout time.Duration // a registration not answered in this is abandoned and tried again
}

func (c dayConfig) length() time.Duration {
	return time.Duration(c.minutes * float64(time.Minute))
}

// organisation is who is in which channel; people and channels are
// numbered from 0 (channel i is the server's channel "day i").
type organisation struct {
	members    [][]int32 // by channel, in order
	channelsOf [][]int16 // by person, in order
}

func newOrganisation(people int, rng *rand.Rand) organisation {
	o := organisation{members: make([][]int32, dayChannels), channelsOf: make([][]int16, people)}
	for p := range people {
		mine := make([]int16, 0, dayChannelsPerPerson)
		for c := range dayEveryoneChannels {
			mine = append(mine, int16(c))
		}
		for _, c := range rng.Perm(dayChannels - dayEveryoneChannels)[:dayChannelsPerPerson-dayEveryoneChannels] {
			mine = append(mine, int16(dayEveryoneChannels+c))
		}
		slices.Sort(mine)
		o.channelsOf[p] = mine
		for _, c := range mine {
			o.members[c] = append(o.members[c], int32(p))
		}
	}
	return o
}

// opKind is a kind of request the day sends.
type opKind uint8

const (
	opRegisterTab opKind = iota
	opRegisterPhone
	opPushToken
	opSend
	opDM
	opRead
	opMark
	opPresence
	opTyping
	opReaction
	opEdit
	opKinds
)

var opNames = [opKinds]string{
	opRegisterTab:   "POST /register (tab)",
	opRegisterPhone: "POST /register (phone)",
	opPushToken:     "POST apns_device_token",
	opSend:          "POST /messages (channel)",
	opDM:            "POST /messages (DM)",
	opRead:          "GET /messages (topic)",
	opMark:          "mark topic read",
	opPresence:      "POST presence",
	opTyping:        "POST /typing",
	opReaction:      "POST reaction",
	opEdit:          "PATCH /messages (edit)",
}

// action is one scheduled request: at its time from the phase's start,
// who sends it and about what.
type action struct {
	at      time.Duration
	kind    opKind
	person  int32
	other   int32 // a DM's recipient, a message's mentioned person; -1 for none
	channel int16 // -1 for a DM
	topic   int8
	variant int8  // a reaction's emoji; a read mark's way (0 flags/narrow, 1 mark_topic_as_read)
	message int32 // a send's message number, or the message a reaction or edit is about
}

// plannedMessage is a message the schedule sends: to a channel, or a DM
// from sender to other.
type plannedMessage struct {
	sender, other int32
	channel       int16 // -1 for a DM
}

// daySchedule is the whole plan: the registrations of the morning, then
// the day's requests in time order, and the messages those send.
type daySchedule struct {
	org      organisation
	ramp     []action // each person's tab and phone registering
	day      []action
	messages []plannedMessage
}

// reactionEmoji are the reactions' names (Zulip's, in zulite's table).
var reactionEmoji = []string{"thumbs_up", "heart", "tada", "smile", "octopus"}

// newDaySchedule plans a day from the configuration alone: the same
// configuration and seed give the same organisation and the same
// requests at the same times. The open-loop streams (messages, DMs,
// reads, marks, typing) are Poisson arrivals at their rates; presence
// comes from each person every presenceEvery from a random phase; every
// reactionEvery-th message gets a reaction, and every editEvery-th an
// edit by its sender, 2 to 20 s after it was sent (within the day).
func newDaySchedule(c dayConfig) daySchedule {
	rng := rand.New(rand.NewPCG(c.seed, 0x31)) // issue 31
	s := daySchedule{org: newOrganisation(c.people, rng)}
	for p := range c.people {
		s.ramp = append(s.ramp,
			action{at: uniform(rng, 0, c.ramp), kind: opRegisterTab, person: int32(p), other: -1},
			action{at: uniform(rng, 0, c.ramp), kind: opRegisterPhone, person: int32(p), other: -1})
	}
	slices.SortStableFunc(s.ramp, func(a, b action) int { return int(a.at - b.at) })

	length := c.length()
	var channels []int16 // those with members, which messages go to
	for ch, m := range s.org.members {
		if len(m) > 0 {
			channels = append(channels, int16(ch))
		}
	}
	inTopic := func(kind opKind, p int32, at time.Duration) action {
		mine := s.org.channelsOf[p]
		return action{at: at, kind: kind, person: p, other: -1, channel: mine[rng.IntN(len(mine))], topic: int8(rng.IntN(dayTopics))}
	}
	streams := []struct {
		kind opKind
		rate float64
	}{{opSend, c.rates.messages}, {opDM, c.rates.dms}, {opRead, c.rates.reads}, {opMark, c.rates.marks}, {opTyping, c.rates.typing}}
	for _, st := range streams {
		if st.rate <= 0 || c.people == 0 {
			continue
		}
		for at := time.Duration(rng.ExpFloat64() / st.rate * float64(time.Second)); at < length; at += time.Duration(rng.ExpFloat64() / st.rate * float64(time.Second)) {
			switch st.kind {
			case opSend:
				ch := channels[rng.IntN(len(channels))]
				members := s.org.members[ch]
				a := action{at: at, kind: opSend, person: members[rng.IntN(len(members))], other: -1, channel: ch, topic: int8(rng.IntN(dayTopics))}
				if rng.Float64() < c.rates.mentions && len(members) > 1 {
					for a.other = a.person; a.other == a.person; {
						a.other = members[rng.IntN(len(members))]
					}
				}
				s.day = append(s.day, a)
			case opDM:
				if c.people < 2 {
					continue
				}
				a := action{at: at, kind: opDM, person: int32(rng.IntN(c.people)), channel: -1}
				for a.other = a.person; a.other == a.person; {
					a.other = int32(rng.IntN(c.people))
				}
				s.day = append(s.day, a)
			default:
				a := inTopic(st.kind, int32(rng.IntN(c.people)), at)
				if a.kind == opMark {
					a.variant = int8(rng.IntN(2))
				}
				s.day = append(s.day, a)
			}
		}
	}
	if c.rates.presenceEvery > 0 {
		for p := range c.people {
			for at := uniform(rng, 0, c.rates.presenceEvery); at < length; at += c.rates.presenceEvery {
				s.day = append(s.day, action{at: at, kind: opPresence, person: int32(p), other: -1, channel: -1})
			}
		}
	}
	slices.SortStableFunc(s.day, func(a, b action) int { return int(a.at - b.at) })

	// Number the messages in the order they are sent, then plan the
	// reactions and edits that follow them.
	var after []action
	for i := range s.day {
		a := &s.day[i]
		if a.kind != opSend && a.kind != opDM {
			continue
		}
		n := len(s.messages)
		a.message = int32(n)
		s.messages = append(s.messages, plannedMessage{sender: a.person, other: a.other, channel: a.channel})
		later := a.at + uniform(rng, 2*time.Second, 20*time.Second)
		if every := c.rates.reactionEvery; every > 0 && n%every == every-1 && later < length {
			reactor := a.person
			if a.kind == opDM {
				if rng.IntN(2) == 1 {
					reactor = a.other
				}
			} else {
				members := s.org.members[a.channel]
				reactor = members[rng.IntN(len(members))]
			}
			after = append(after, action{at: later, kind: opReaction, person: reactor, other: -1, channel: a.channel, message: int32(n), variant: int8(rng.IntN(len(reactionEmoji)))})
		}
		later = a.at + uniform(rng, 2*time.Second, 20*time.Second)
		if every := c.rates.editEvery; every > 0 && n%every == every-1 && later < length {
			after = append(after, action{at: later, kind: opEdit, person: a.person, other: -1, channel: a.channel, message: int32(n)})
		}
	}
	s.day = append(s.day, after...)
	slices.SortStableFunc(s.day, func(a, b action) int { return int(a.at - b.at) })
	return s
}

// uniform answers a time in [from, to).
func uniform(rng *rand.Rand, from, to time.Duration) time.Duration {
	if to <= from {
		return from
	}
	return from + time.Duration(rng.Int64N(int64(to-from)))
}

// recipients are the people whose tabs should get a message's event:
// the channel's members (the sender among them), or a DM's two people.
func (s *daySchedule) recipients(m plannedMessage) []int32 {
	if m.channel < 0 {
		return []int32{m.sender, m.other}
	}
	return s.org.members[m.channel]
}

// sentMessage is a message as it was sent: its id (0 when the send did
// not answer one), when the send began, and whose tabs should get it.
type sentMessage struct {
	id         uint64
	at         time.Time
	recipients []int32
}

// deliveries is how the message events reached the tabs.
type deliveries struct {
	expected, delivered int
	duplicates          int             // events received again by a tab that had them
	latencies           []time.Duration // send's start to the first receipt, sorted
}

func (d deliveries) missing() int { return d.expected - d.delivered }

// countDeliveries compares what every tab should have received (every
// recipient of every message sent) with what each person's tab received
// (receipts by person, over all its queues): a message event a tab never
// received is missing, one received twice counts once, and the events
// of messages not sent by the day (a send that failed, say) are not
// counted.
func countDeliveries(sent []sentMessage, receipts [][]receipt) deliveries {
	var d deliveries
	byID := make(map[uint64]int, len(sent))
	for i, m := range sent {
		if m.id != 0 {
			byID[m.id] = i
		}
	}
	first := make([]map[int]time.Time, len(receipts)) // by person: message → first receipt
	for p, rs := range receipts {
		first[p] = make(map[int]time.Time, len(rs))
		for _, r := range rs {
			i, ok := byID[r.id]
			if !ok {
				continue
			}
			if at, seen := first[p][i]; seen {
				d.duplicates++
				if r.at.Before(at) {
					first[p][i] = r.at
				}
				continue
			}
			first[p][i] = r.at
		}
	}
	for i, m := range sent {
		if m.id == 0 {
			continue
		}
		for _, p := range m.recipients {
			d.expected++
			if int(p) >= len(first) {
				continue
			}
			if at, ok := first[p][i]; ok {
				d.delivered++
				d.latencies = append(d.latencies, at.Sub(m.at))
			}
		}
	}
	slices.Sort(d.latencies)
	return d
}

// quantile answers the q-quantile of sorted durations (0 for none).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*q))]
}

// opStats is one kind of request's figures.
type opStats struct {
	count, errors int
	latencies     []time.Duration // sorted when the day is over
}

// dayResult is one binary's day.
type dayResult struct {
	label string
	ops   [opKinds]opStats
	// tabsRegistered counts the tabs that registered at least once;
	// reRegistrations, the registrations after BAD_EVENT_QUEUE_ID.
	tabsRegistered, phonesRegistered int
	badQueue, reRegistrations        int
	stateBytes                       int // the mean register answer of a tab
	reconnects                       int // polls' connections the server closed
	skipped                          int // reactions and edits whose message had no id
	messages                         deliveries
	presenceEvents                   int64
	peakKiB                          int       // the server's VmHWM
	serverCPU                        []float64 // a core's share, minute by minute of the day
	rampCPU                          float64   // the server's, while registering
	generatorCPU                     float64   // this process's share of a core over the day
	othersCPU                        float64   // the rest of the machine's, in cores
	memoryStall                      float64   // the share of the day the whole machine waited on memory
	lateness                         []time.Duration
	latenessP99ByMinute              []time.Duration
	errorLines                       int      // the server's log lines at level ERROR
	errorSamples                     []string // the first of them
	failures                         []string // unexpected statuses, each with its body
	noAnswers                        []string // requests that timed out or lost their connection, counted
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// printDay prints the days side by side, a column each, in the style of
// the sweep's table.
func printDay(c dayConfig, results []dayResult) {
	fmt.Printf("\na working day: %d people, each a web tab (every event type, the whole initial state, long-polling) and a phone (registered, an APNs token, never polled); %d channels (%d everyone's, %d a person); %.4g min; %s; seed %d\n",
		c.people, dayChannels, dayEveryoneChannels, dayChannelsPerPerson, c.minutes, c.rates, c.seed)
	const label = 38
	fmt.Printf("%-*s", label, "")
	for _, r := range results {
		fmt.Printf(" | %-46s", r.label)
	}
	fmt.Printf("\n%-*s", label, "request")
	for range results {
		fmt.Printf(" | %7s %5s %10s %10s %10s", "count", "err", "p50", "p99", "max")
	}
	fmt.Println()
	for k := range opKinds {
		fmt.Printf("%-*s", label, opNames[k])
		for _, r := range results {
			o := r.ops[k]
			fmt.Printf(" | %7d %5d %8.1fms %8.1fms %8.1fms", o.count, o.errors, ms(quantile(o.latencies, 0.5)), ms(quantile(o.latencies, 0.99)), ms(quantile(o.latencies, 1)))
		}
		fmt.Println()
	}
	line := func(name string, cell func(r dayResult) string) {
		fmt.Printf("%-*s", label, name)
		for _, r := range results {
			fmt.Printf(" | %-46s", cell(r))
		}
		fmt.Println()
	}
	line("tabs registered / phones registered", func(r dayResult) string {
		return fmt.Sprintf("%d of %d / %d of %d", r.tabsRegistered, c.people, r.phonesRegistered, c.people)
	})
	line("BAD_EVENT_QUEUE_ID / re-registered", func(r dayResult) string { return fmt.Sprintf("%d / %d", r.badQueue, r.reRegistrations) })
	line("a tab's initial state", func(r dayResult) string { return fmt.Sprintf("%.0f KB", float64(r.stateBytes)/1000) })
	line("message events: expected", func(r dayResult) string { return strconv.Itoa(r.messages.expected) })
	line("  delivered / missing", func(r dayResult) string {
		return fmt.Sprintf("%d / %d", r.messages.delivered, r.messages.missing())
	})
	line("  duplicates", func(r dayResult) string { return strconv.Itoa(r.messages.duplicates) })
	line("  send to receipt p50 / p99 / max", func(r dayResult) string {
		l := r.messages.latencies
		return fmt.Sprintf("%.1f / %.1f / %.1f ms", ms(quantile(l, 0.5)), ms(quantile(l, 0.99)), ms(quantile(l, 1)))
	})
	line("presence events received by tabs", func(r dayResult) string { return strconv.FormatInt(r.presenceEvents, 10) })
	line("server peak RSS (VmHWM)", func(r dayResult) string { return fmt.Sprintf("%.1f MiB", float64(r.peakKiB)/1024) })
	line("server CPU while registering", func(r dayResult) string { return fmt.Sprintf("%.0f%% of a core", r.rampCPU*100) })
	line("server CPU, minute by minute", func(r dayResult) string {
		var s []string
		for _, f := range r.serverCPU {
			s = append(s, fmt.Sprintf("%.0f%%", f*100))
		}
		return strings.Join(s, " ") + " of a core"
	})
	line("generator CPU over the day", func(r dayResult) string { return fmt.Sprintf("%.0f%% of a core", r.generatorCPU*100) })
	line("other processes' CPU meanwhile", func(r dayResult) string {
		return fmt.Sprintf("%.0f%% of a core (of %d here)", r.othersCPU*100, runtime.NumCPU())
	})
	line("machine stalled on memory (PSI full)", func(r dayResult) string { return fmt.Sprintf("%.1f%% of the day", r.memoryStall*100) })
	line("schedule lateness p50 / p99 / max", func(r dayResult) string {
		l := r.lateness
		return fmt.Sprintf("%.2f / %.2f / %.1f ms", ms(quantile(l, 0.5)), ms(quantile(l, 0.99)), ms(quantile(l, 1)))
	})
	line("  p99, minute by minute", func(r dayResult) string {
		var s []string
		for _, l := range r.latenessP99ByMinute {
			s = append(s, fmt.Sprintf("%.1f", ms(l)))
		}
		return strings.Join(s, " ") + " ms"
	})
	line("poll connections closed by server", func(r dayResult) string { return strconv.Itoa(r.reconnects) })
	line("reactions/edits skipped (no id)", func(r dayResult) string { return strconv.Itoa(r.skipped) })
	line("server log lines at level ERROR", func(r dayResult) string { return strconv.Itoa(r.errorLines) })
}
