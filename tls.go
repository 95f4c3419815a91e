package main

import (
	"crypto/tls"
	"fmt"
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
