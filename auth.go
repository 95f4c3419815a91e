package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// API keys are 32 characters from [A-Za-z0-9], as Zulip's are.
const (
	apiKeyLength   = 32
	apiKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// newAPIKey makes a key from crypto/rand, rejecting bytes that would bias
// the choice of character.
func newAPIKey() string {
	const limit = 256 - 256%len(apiKeyAlphabet)
	key := make([]byte, 0, apiKeyLength)
	buf := make([]byte, 64)
	for len(key) < apiKeyLength {
		rand.Read(buf)
		for _, b := range buf {
			if int(b) < limit && len(key) < apiKeyLength {
				key = append(key, apiKeyAlphabet[int(b)%len(apiKeyAlphabet)])
			}
		}
	}
	return string(key)
}

func isAPIKey(s string) bool {
	if len(s) != apiKeyLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// basicCredentials reads e-mail and API key from an Authorization header,
// checking the key's form before anything is looked up.
func basicCredentials(header string) (email, key string, err error) {
	if header == "" {
		return "", "", errNotLoggedIn
	}
	scheme, encoded, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", "", errNotBasic
	}
	encoded = strings.TrimSpace(encoded)
	var small [192]byte // an e-mail, a colon and a key decode here, not on the heap
	decoded := small[:]
	if n := base64.StdEncoding.DecodedLen(len(encoded)); n > len(small) {
		decoded = make([]byte, n)
	}
	n, decodeErr := base64.StdEncoding.Decode(decoded, []byte(encoded))
	if decodeErr != nil {
		return "", "", errBadBasicHeader
	}
	email, key, ok := strings.Cut(string(decoded[:n]), ":")
	if !ok {
		return "", "", errBadBasicHeader
	}
	if !isAPIKey(key) {
		return "", "", errMalformedAPIKey
	}
	return email, key, nil
}

// authenticate answers the account behind the request's Basic credentials.
// The page's requests (/json/..., and files it shows) go by its session
// instead (web.go).
func (s *server) authenticate(r *http.Request) (user, error) {
	if strings.HasPrefix(r.URL.Path, "/json/") {
		return s.sessionAuthenticate(r, true)
	}
	if isSessionPath(r) && hasSessionCookie(r) {
		return s.sessionAuthenticate(r, false)
	}
	email, key, err := basicCredentials(r.Header.Get("Authorization"))
	if err != nil {
		return user{}, err
	}
	u, err := s.store.keys.authenticate(email, key)
	if errors.Is(err, errBadCredentials) {
		return user{}, errInvalidAPIKey
	}
	if err != nil {
		return user{}, err
	}
	if !u.Active {
		return user{}, errDeactivated
	}
	return u, nil
}
