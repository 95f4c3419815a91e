package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/acme/autocert"
)

// serverTLS is the TLS configuration the server uses: a certificate and
// key from files (--tls-cert, --tls-key), or certificates obtained and
// renewed automatically from an ACME authority (--acme-domain, cached in
// --acme-cache); nil for plain HTTP.
func serverTLS(o options) (*tls.Config, error) {
	switch {
	case o.TLSCert != "":
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
	case o.ACMEDomain != "":
		m, err := acmeManager(o.ACMEDomain, o.ACMECache, o.DB)
		if err != nil {
			return nil, err
		}
		config := m.TLSConfig() // answers TLS-ALPN-01 challenges on this listener
		config.MinVersion = tls.VersionTLS12
		return config, nil
	}
	return nil, nil
}

// strictTransportSecurity tells a browser that reached zulite over TLS
// to come back over nothing else for a year (RFC 6797), the max-age
// Zulip's nginx sends. It leaves out Zulip's includeSubDomains: that
// would speak for hosts under zulite's name that zulite does not serve.
const strictTransportSecurity = "max-age=31536000"

// strictTransport sets Strict-Transport-Security on every answer of a
// server serving TLS. Set before the handler runs, it is also in the head
// a parked poll keeps for its answer (parking.go).
func strictTransport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", strictTransportSecurity)
		next.ServeHTTP(w, r)
	})
}

// acmeManager obtains certificates for exactly the given domains (comma
// separated), keeping them in cacheDir (default: acme-cache beside the
// database), created with mode 0700.
func acmeManager(domains, cacheDir, db string) (*autocert.Manager, error) {
	var names []string
	for _, d := range strings.Split(domains, ",") {
		if d = strings.TrimSpace(d); d != "" {
			names = append(names, d)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: --acme-domain names no domain", errUsage)
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(filepath.Dir(db), "acme-cache")
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	return &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		HostPolicy: autocert.HostWhitelist(names...),
		Cache:      autocert.DirCache(cacheDir),
	}, nil
}
