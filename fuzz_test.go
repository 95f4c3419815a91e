package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.etcd.io/bbolt"
)

// Fuzz targets: go test -run XXX -fuzz FuzzName -fuzztime 10s .
// Seeds are in testdata/fuzz/FuzzName/ as well as below.

func FuzzParams(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("token=ab&token=cd"), "token=ef")
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--\r\n"), "")
	f.Add("text/plain", []byte("a=b"), "a=%zz")
	f.Fuzz(func(t *testing.T, contentType string, body []byte, query string) {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/x", bytes.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", contentType)
		p, err := readParams(httptest.NewRecorder(), req, 1<<16)
		if err != nil {
			if ae := asAPIError(err); ae.status != 400 && ae.status != 413 {
				t.Fatalf("error %d %q, want 400 or 413", ae.status, ae.msg)
			}
			return
		}
		for name := range p.body {
			if v, ok := p.lookup(name); !ok || v != p.body[name][len(p.body[name])-1] {
				t.Fatalf("lookup(%q): body value not found last-wins", name)
			}
		}
	})
}

// FuzzBasicAuth holds basicCredentials to its contract both ways. A
// header built from an (e-mail, key) pair, as a client's SetBasicAuth
// builds it, gives that pair back; when the key is not 32 letters and
// digits, or the e-mail holds a colon (the colon ends the e-mail), it is
// "Malformed API key" instead. Any other header is refused with one of
// auth.go's errors, 400 only for another scheme and 401 otherwise, or
// gives back exactly the pair its base64 holds: never a different one.
func FuzzBasicAuth(f *testing.F) {
	key := strings.Repeat("A", apiKeyLength)
	f.Add("Basic "+"YWxpY2VAZXhhbXBsZS5jb206"+strings.Repeat("QUFB", 10)+"QUE=", "Alice@Example.com", key)
	f.Add("Bearer x", "a:b@example.com", key)
	f.Add("Basic !!!", "alice@example.com", key[1:]+"-")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, header, email, key string) {
		built := http.Header{}
		(&http.Request{Header: built}).SetBasicAuth(email, key)
		gotEmail, gotKey, err := basicCredentials(built.Get("Authorization"))
		if wellFormedKey(key) && !strings.Contains(email, ":") {
			if err != nil || gotEmail != email || gotKey != key {
				t.Fatalf("built from (%q, %q): got (%q, %q, %v), want the pair back", email, key, gotEmail, gotKey, err)
			}
		} else if !errors.Is(err, errMalformedAPIKey) {
			t.Fatalf("built from (%q, %q): got (%q, %q, %v), want %q", email, key, gotEmail, gotKey, err, errMalformedAPIKey.msg)
		}

		gotEmail, gotKey, err = basicCredentials(header)
		scheme, payload, _ := strings.Cut(header, " ")
		if err != nil {
			wantStatus := http.StatusUnauthorized
			if header != "" && !strings.EqualFold(scheme, "Basic") {
				wantStatus = http.StatusBadRequest
			}
			known := slices.ContainsFunc([]error{errNotLoggedIn, errNotBasic, errBadBasicHeader, errMalformedAPIKey}, func(e error) bool { return errors.Is(err, e) })
			if ae := asAPIError(err); !known || ae.status != wantStatus {
				t.Fatalf("header %q: got %d %q, want one of auth.go's errors with status %d", header, ae.status, ae.msg, wantStatus)
			}
			return
		}
		decoded, decodeErr := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
		if !strings.EqualFold(scheme, "Basic") || decodeErr != nil || string(decoded) != gotEmail+":"+gotKey ||
			strings.Contains(gotEmail, ":") || !wellFormedKey(gotKey) {
			t.Fatalf("header %q: accepted as (%q, %q), which is not the pair it holds", header, gotEmail, gotKey)
		}
	})
}

// wellFormedKey is isAPIKey written another way, so that the fuzz target
// does not check the code against itself.
func wellFormedKey(key string) bool {
	return len(key) == apiKeyLength && strings.Trim(key, apiKeyAlphabet) == ""
}

// hexReference is Python's bytes.fromhex, written another way: a regular
// expression of pairs and ASCII whitespace.
var hexReference = regexp.MustCompile(`^[ \t\n\r\v\f]*(?:[0-9a-fA-F]{2}[ \t\n\r\v\f]*)*$`)

func FuzzHexToken(f *testing.F) {
	for _, s := range []string{"", "ab", "a b", " ab cd ", "0xab", "abc", "AbCdEf", "ab\x00cd", "ab\u00a0cd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isHexToken(s), hexReference.MatchString(s); got != want {
			t.Fatalf("isHexToken(%q): got %v, want %v", s, got, want)
		}
	})
}

func FuzzTypedValue(f *testing.F) {
	for _, s := range []string{"7", " 7 ", "7.0", "true", `"7"`, "[7]", "abc", "", "99999999999999999999", "-0", "1e3", "[1,2]", "-", "07", "-07", "0", "9223372036854775807", "-9223372036854775808", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := parseInt("x", v)
		// The bare-integer fast path answers exactly as the decoder does.
		if slowN, slowErr := decodeJSONInt("x", v); n != slowN || fmt.Sprint(err) != fmt.Sprint(slowErr) {
			t.Fatalf("parseInt(%q) = %d, %v; through the decoder %d, %v", v, n, err, slowN, slowErr)
		}
		if err != nil {
			if ae := asAPIError(err); ae.status != 400 || !strings.HasPrefix(ae.msg, "x is not") {
				t.Fatalf("parseInt(%q): %d %q", v, ae.status, ae.msg)
			}
			return
		}
		var f64 json.Number
		if json.Unmarshal([]byte(v), &f64) != nil {
			t.Fatalf("parseInt(%q) = %d, but it is not a JSON number", v, n)
		}
		if want, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || want != n {
			t.Fatalf("parseInt(%q) = %d, want %d (%v)", v, n, want, err)
		}
	})
}

// dbDigest hashes every key and value of the database.
func dbDigest(t testing.TB, st *store) [32]byte {
	h := sha256.New()
	mustView(t, st, func(tx *bbolt.Tx) error {
		var walk func(b *bbolt.Bucket)
		walk = func(b *bbolt.Bucket) {
			b.ForEach(func(k, v []byte) error {
				h.Write(k)
				if v == nil {
					h.Write([]byte("{"))
					walk(b.Bucket(k))
					h.Write([]byte("}"))
				} else {
					h.Write(v)
				}
				return nil
			})
		}
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			h.Write(name)
			walk(b)
			return nil
		})
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// FuzzRequest sends whole requests through the handler: no panic, no
// 5xx, a well-formed envelope, and a refused request changes nothing.
func FuzzRequest(f *testing.F) {
	e := newTestEnv(f)
	e.server.events.pollTimeout = 10 * time.Millisecond
	routes := e.server.routeList()
	route := func(pattern string) uint8 { return uint8(slices.Index(routes, pattern)) }
	f.Add(route("POST /api/v1/users/me/apns_device_token"), "token=ab", "application/x-www-form-urlencoded", "", uint8(2))
	f.Add(route("POST /api/v1/users/me/subscriptions"), `subscriptions=[{"name":"x"}]`, "application/x-www-form-urlencoded", "", uint8(2))
	f.Add(route("GET /api/v1/messages"), "", "", "anchor=newest&num_before=5&num_after=0&narrow=[[\"is\",\"unread\"]]", uint8(2))
	f.Add(route("POST /api/v1/scheduled_messages"), "type=stream&to=1&topic=t&content=c&scheduled_delivery_timestamp=1", "application/x-www-form-urlencoded", "", uint8(2))
	f.Fuzz(func(t *testing.T, route uint8, body, contentType, query string, who uint8) {
		r := routes[int(route)%len(routes)]
		if r == "POST /api/v1/export/realm" {
			return // its export changes the database later, in the background, under another request's digest
		}
		method, path, _ := strings.Cut(r, " ")
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.URL.RawQuery = query
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		accounts := []*account{&e.owner, &e.alice, &e.bob, &e.bot}
		if a := int(who) % (len(accounts) + 1); a < len(accounts) {
			req.SetBasicAuth(accounts[a].Email, accounts[a].key)
		}
		before := dbDigest(t, e.st)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		if path == "/metrics" && rec.Code == 200 {
			return // Prometheus text, not an envelope (TestMetrics parses it)
		}
		if signup := strings.HasPrefix(path, "/join/") || strings.HasPrefix(path, "/accounts/do_confirm/"); signup && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			// The sign-up pages are HTML, as Zulip's registration pages
			// are (signup.go): a page, and nothing changed unless it
			// succeeded. A path no route takes gets the JSON 404 below.
			if rec.Code >= 400 && dbDigest(t, e.st) != before {
				t.Fatalf("%s %s: refused with %d but the database changed", method, path, rec.Code)
			}
			return
		}
		var env map[string]any
		raw := rec.Body.Bytes()
		if !bytes.HasSuffix(raw, []byte("\n")) || json.Unmarshal(raw, &env) != nil || !utf8.Valid(raw) {
			t.Fatalf("%s %s: malformed envelope %q", method, path, raw)
		}
		if _, ok := env["msg"].(string); !ok || (env["result"] != "success") != (rec.Code >= 400) {
			t.Fatalf("%s %s: %d with envelope %q", method, path, rec.Code, raw)
		}
		if rec.Code >= 400 && dbDigest(t, e.st) != before {
			t.Fatalf("%s %s: refused with %d but the database changed", method, path, rec.Code)
		}
	})
}
