// Package push delivers Zulip's mobile push notifications: it shapes
// Zulip's APNs and FCM payloads for a message or a remove
// (zerver/lib/push_notifications.py), and, given a notification and a
// device, delivers it, directly (Apple's APNs over HTTP/2 with an ES256
// provider token; Google's FCM HTTP v1 with an OAuth token got with an
// RS256 assertion) or through Zulip's push bouncer, saying of a failure
// whether the token is dead (*DeadTokenError) or the failure may pass
// (*TransientError).
//
// Who gets a push, the outbox that makes deliveries durable and the
// removal of a pushed message once read are the core's: it fills in
// Message and Device and keeps what the answers say. This package never
// imports bbolt, the core's handlers or package main's types, and never
// puts a credential (a key, a provider token, an access token, the
// bouncer's org key) into an error.
package push
