package main

// The changes the store reports once they are committed, in commit order
// (store.updateReporting); the server turns them into events.

// messageSent: a channel message was stored.
type messageSent struct {
	sentMessage
	Sender user
}

// flagsChanged: a personal flag changed on some of the user's messages.
type flagsChanged struct {
	User    user
	Change  flagChange
	IDs     []uint64  // exactly the ids whose flag changed, sorted
	All     bool      // every message (mark_all_as_read)
	Details []message // the messages, when read was removed
	// Uncollected: nobody listened when the change was made, so its ids
	// were not collected; queues registered after ListenSeq may have
	// missed it.
	Uncollected bool
	ListenSeq   uint64
}

// subscriptionsChanged: the user joined or left channels.
type subscriptionsChanged struct {
	User     user
	Op       string // "add" or "remove"
	Channels []channel
}
