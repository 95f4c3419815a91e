package main

// Mobile push-token registration and removal (SPEC §5), the seed's first
// operation.

import (
	"strings"
	"unicode/utf8"
)

const maxPushTokenLength = 4096

// isAppID is what Zulip accepts as an iOS app id, ^[.a-zA-Z0-9-]+$.
func isAppID(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	return s != ""
}

// addAPNsToken serves POST /api/v1/users/me/apns_device_token.
func (s *server) addAPNsToken(r *apiRequest) (any, error) { return s.addPushToken(r, pushAPNs) }

// addFCMToken serves POST /api/v1/users/me/android_gcm_reg_id.
func (s *server) addFCMToken(r *apiRequest) (any, error) { return s.addPushToken(r, pushFCM) }

// removeAPNsToken serves DELETE /api/v1/users/me/apns_device_token.
func (s *server) removeAPNsToken(r *apiRequest) (any, error) { return s.removePushToken(r, pushAPNs) }

// removeFCMToken serves DELETE /api/v1/users/me/android_gcm_reg_id.
func (s *server) removeFCMToken(r *apiRequest) (any, error) { return s.removePushToken(r, pushFCM) }

// testPushNotification serves POST /api/v1/mobile_push/test_notification
// (Zulip's send_test_push_notification_api): a test notification to the
// caller's devices, or to the one whose token is given, through the
// configured way out; with none configured nothing is sent and the
// answer is a success, as Zulip's senders log and return.
func (s *server) testPushNotification(r *apiRequest) (any, error) {
	devices, err := s.store.testPushDevices(r.user.ID, optionalString(r.params, "token"))
	if err != nil || s.pusher == nil || len(devices) == 0 {
		return nil, err
	}
	return nil, s.pusher.queueTest(r.user.ID, devices)
}

func (s *server) addPushToken(r *apiRequest, kind pushKind) (any, error) {
	token, err := r.params.requiredString("token")
	if err != nil {
		return nil, err
	}
	t := pushToken{Kind: kind, Token: token}
	if kind == pushAPNs {
		if t.AppID, err = r.params.matchString("appid", isAppID, "org.zulip.Zulip"); err != nil {
			return nil, err
		}
	}
	if err := validatePushToken(kind, token); err != nil {
		return nil, err
	}
	return nil, s.store.addPushToken(r.user.ID, t)
}

func (s *server) removePushToken(r *apiRequest, kind pushKind) (any, error) {
	token, err := r.params.requiredString("token")
	if err != nil {
		return nil, err
	}
	if err := validatePushToken(kind, token); err != nil {
		return nil, err
	}
	return nil, s.store.removePushToken(r.user.ID, kind, token)
}

// validatePushToken applies Zulip's checks: a length, and for Apple
// tokens, hex.
func validatePushToken(kind pushKind, token string) error {
	if token == "" || utf8.RuneCountInString(token) > maxPushTokenLength || strings.ContainsRune(token, 0) {
		return errTokenLength
	}
	if kind == pushAPNs && !isHexToken(token) {
		return errInvalidAPNsToken
	}
	return nil
}

// isHexToken is Python's bytes.fromhex, which Zulip uses: pairs of hex
// digits, with ASCII whitespace allowed between pairs and at the ends.
func isHexToken(s string) bool {
	for i := 0; i < len(s); {
		if isASCIISpace(s[i]) {
			i++
			continue
		}
		if i+1 >= len(s) || !isHexDigit(s[i]) || !isHexDigit(s[i+1]) {
			return false
		}
		i += 2
	}
	return true
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
