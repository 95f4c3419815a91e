// Package conns is zulite's connection plumbing under net/http: the
// bound on open connections (Limiter, with its hooks ConnContext and
// ConnState and its middleware Serving), and the parking of long polls
// (Parking): a waiting request's connection taken from net/http and held
// without a goroutine, watched in an epoll set for its client going
// away, answered later as net/http would answer, and then kept, still
// without a goroutine, until the client's next request, which is read
// here when it is one more poll and otherwise handed back to net/http
// through the listener it serves.
//
// It knows no route, queue, account or store: its server names the
// paths of the polls (Parking.Paths), decides when a poll parks and what
// its answer is, and serves what is read here through its own handler.
// The package never calls back into the server except through what
// Parking's fields declare (Handler, Run, Closing). It imports only the
// standard library: never bbolt, never package main's types or handlers.
package conns
