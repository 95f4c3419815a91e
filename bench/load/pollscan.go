package main

import (
	"errors"
	"strconv"
)

// scanPoll reads what the fan-out's pollers and the day's tabs need of a
// poll's answer (the result, the error code, and each event's id, type
// and message id)
// without encoding/json: at ten thousand queues the load shares the
// server's processors, and decoding every message event by reflection
// was a third of its time. It walks the JSON as it is, values it does not
// need skipped whole, and fails on anything that is not JSON's shape.
func scanPoll(b []byte, events []pollEvent) (result, code string, _ []pollEvent, err error) {
	s := &scanner{b: b}
	err = s.object(func(key string) error {
		switch key {
		case "result":
			result, err = s.str()
		case "code":
			code, err = s.str()
		case "events":
			err = s.array(func() error {
				var e pollEvent
				err := s.object(func(key string) error {
					switch key {
					case "id":
						e.id, err = s.int()
						return err
					case "type":
						t, err := s.str()
						e.message, e.presence = t == "message", t == "presence"
						return err
					case "message":
						return s.object(func(key string) error {
							if key == "id" {
								id, err := s.int()
								e.messageID = uint64(id)
								return err
							}
							return s.skip()
						})
					}
					return s.skip()
				})
				events = append(events, e)
				return err
			})
		default:
			err = s.skip()
		}
		return err
	})
	return result, code, events, err
}

type pollEvent struct {
	id        int64
	message   bool
	messageID uint64
	presence  bool // the day counts presence events (day.go)
}

type scanner struct {
	b []byte
	i int
}

var errScan = errors.New("poll: the answer is not the JSON expected")

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\r' || s.b[s.i] == '\t') {
		s.i++
	}
}

func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object calls member for each key, with the scanner at its value.
func (s *scanner) object(member func(key string) error) error {
	if !s.next('{') {
		return errScan
	}
	if s.next('}') {
		return nil
	}
	for {
		key, err := s.str()
		if err != nil || !s.next(':') {
			return errScan
		}
		if err := member(key); err != nil {
			return err
		}
		if s.next('}') {
			return nil
		}
		if !s.next(',') {
			return errScan
		}
	}
}

func (s *scanner) array(element func() error) error {
	if !s.next('[') {
		return errScan
	}
	if s.next(']') {
		return nil
	}
	for {
		if err := element(); err != nil {
			return err
		}
		if s.next(']') {
			return nil
		}
		if !s.next(',') {
			return errScan
		}
	}
}

// str reads a string; the keys and values read are plain ASCII, so an
// escape is kept as written.
func (s *scanner) str() (string, error) {
	if !s.next('"') {
		return "", errScan
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return string(s.b[start : s.i-1]), nil
		default:
			s.i++
		}
	}
	return "", errScan
}

func (s *scanner) int() (int64, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] >= '0' && s.b[s.i] <= '9') {
		s.i++
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		return 0, errScan
	}
	return n, nil
}

// skip passes over one value of any kind.
func (s *scanner) skip() error {
	s.ws()
	if s.i >= len(s.b) {
		return errScan
	}
	switch s.b[s.i] {
	case '"':
		_, err := s.str()
		return err
	case '{':
		return s.object(func(string) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	}
	start := s.i // a number, true, false or null
	for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' && s.b[s.i] != ' ' {
		s.i++
	}
	if s.i == start {
		return errScan
	}
	return nil
}
