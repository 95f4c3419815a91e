package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"zulite/internal/conns"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "zulite:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

const (
	defaultMaxBody  = 1 << 20 // 1 MiB, SPEC §3
	shutdownTimeout = 10 * time.Second
)

// defaultGCPercent is the garbage collector's GOGC unless the environment
// sets one. zulite's live heap is small (about 5 MiB serving the load
// benchmark) while each request allocates several KiB, mostly in
// net/http, so with Go's 100 the collector runs dozens of times a second
// under load. At 200, bench/load's zulite answered about a tenth more
// requests a second at concurrency 64, for a peak RssAnon of 15 MiB
// instead of 10; the README gives what it costs elsewhere (a burst of
// logins, the soak). GOGC=100 (or GOMEMLIMIT) gives memory back on a
// device that needs it.
const defaultGCPercent = 200

// tuneGC applies defaultGCPercent when GOGC is not set (run calls it for
// serve). It is process-wide: a test serving in-process sets it for the
// test binary, which is harmless there.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

// serve runs the API until ctx ends (SIGINT or SIGTERM), then finishes
// in-flight requests and closes the database.
func serve(ctx context.Context, o options, stdout, stderr io.Writer) error {
	logOut := newBufferedLog(stderr)
	defer logOut.close()
	var log *slog.Logger
	switch o.LogFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(logOut, nil))
	case "json":
		log = slog.New(slog.NewJSONHandler(logOut, nil))
	default:
		return fmt.Errorf("%w: --log-format is text or json", errUsage)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") || (o.TLSCert != "" && o.ACMEDomain != "") {
		return fmt.Errorf("%w: give --tls-cert with --tls-key, or --acme-domain, not both", errUsage)
	}
	if o.QueueIdle <= 0 || o.HeaderWait <= 0 || o.BodyWait <= 0 {
		return fmt.Errorf("%w: timeouts must be positive", errUsage)
	}
	rules, err := parseRateRules(o.RateLimit)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	proxies, err := parseTrustedProxies(o.TrustedProxies)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.MaxConns < 1 {
		return fmt.Errorf("%w: --max-connections must be at least 1", errUsage)
	}
	if o.PresenceEventsLimit < 0 {
		return fmt.Errorf("%w: --presence-events-limit must be 0 or more", errUsage)
	}
	if o.MaxChannels < 1 {
		return fmt.Errorf("%w: --max-channels must be at least 1", errUsage)
	}
	uploads, err := uploadLimitsFrom(o)
	if err != nil {
		return err
	}
	relay, err := smtpFrom(o)
	if err != nil {
		return err
	}
	st, err := openNewOrExisting(o.DB, stdout)
	if err != nil {
		return err
	}
	st.maxChannels = uint64(o.MaxChannels)
	defer st.close()

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var mln net.Listener // every listener is open before anything is served or printed
	if o.MetricsAddr != "" {
		if mln, err = net.Listen("tcp", o.MetricsAddr); err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer mln.Close()
	}
	tlsConfig, err := serverTLS(o)
	if err != nil {
		return err
	}
	baseURL := strings.TrimRight(o.URL, "/")
	switch {
	case baseURL != "":
	case o.ACMEDomain != "":
		baseURL = "https://" + strings.Split(o.ACMEDomain, ",")[0]
	case tlsConfig != nil:
		baseURL = "https://" + reachableAddr(ln.Addr())
	default:
		baseURL = "http://" + reachableAddr(ln.Addr())
	}
	if o.URL == "" && o.ACMEDomain == "" && isUnspecified(ln.Addr()) {
		log.Warn("no --url: clients are told "+baseURL+", this machine's name or first address; set --url to the address they reach it by", "url", baseURL)
	}
	if warning := plainHTTPWarning(ln.Addr(), tlsConfig != nil); warning != "" {
		log.Warn(warning)
	}
	if err := bootstrap(st, o, baseURL, stdout); err != nil {
		return err
	}

	// The server owns its goroutines: whichever way serve returns, they
	// are stopped and waited for before the store closes (deferred after
	// st.close, so run before it).
	ctx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() {
		stop()
		running.Wait()
	}()

	s := newServer(st, log, baseURL, o.RealmName)
	if n, err := st.failPendingExports(time.Now()); err != nil {
		return err
	} else if n > 0 {
		log.Warn("data exports left pending by the last run are marked failed", "exports", n)
	}
	s.requestLog = &requestLog{out: logOut, json: o.LogFormat == "json"}
	s.events.idleTimeout = o.QueueIdle
	s.presenceEventsLimit = o.PresenceEventsLimit
	s.limits = newRateLimiter(rules)
	s.trustedProxies = proxies
	s.uploads = uploads
	if uploads.reserve > 0 && !diskFreeChecked {
		log.Warn("--upload-disk-reserve-mib is not enforced on this system: its free disk space is not read; the upload quotas still hold")
	}
	running.Go(func() { st.uploadJanitor(ctx, uploadSweepInterval, uploads.grace, log.Info) })
	if rules == nil {
		// off lifts the limits on requests: per account, and on failed
		// authentications (per address, and per account for passwords).
		// The abuse budgets (channels an account creates, upload quotas,
		// --max-channels) are no request limits, and stay.
		s.logins = nil
	}
	running.Go(func() { s.events.run(ctx) })
	running.Go(func() { s.scheduler.run(ctx) })
	if relay != nil {
		s.mailer = newMailer(*relay, o.RealmName, log)
		s.metrics.mails = s.mailer
		running.Go(func() { s.mailer.run(ctx) })
	}
	if s.pusher, err = newPushWorker(st, s, o, log); err != nil {
		return err
	}
	s.metrics.pushes = st // at zero while pushes are off, as Prometheus prefers to a series that appears later
	if s.pusher != nil {
		running.Go(func() { s.pusher.run(ctx) })
	}

	admin, err := listenAdmin(socketPath(o.DB))
	if err != nil {
		return err
	}
	defer admin.Close()
	running.Go(func() { serveAdmin(admin, adminEnv{st, s.passwords}) })

	srv, listening := s.httpServer(ln, o, tlsConfig, log)
	served := make(chan error, 2)
	go func() { served <- srv.Serve(listening) }()
	var msrv *http.Server
	if mln != nil {
		metricsMux := http.NewServeMux()
		metricsMux.Handle("GET /metrics", s.withRequestLog(s.metricsPage(false)))
		msrv = &http.Server{Handler: metricsMux, ReadHeaderTimeout: o.HeaderWait, ReadTimeout: o.BodyWait, WriteTimeout: 30 * time.Second}
		go func() { served <- msrv.Serve(mln) }()
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	log.Info("listening", "addr", ln.Addr().String(), "url", baseURL, "db", o.DB, "tls", tlsConfig != nil)

	var failed error
	select {
	case failed = <-served: // a listener broke: still shut down in order
		log.Error("serving stopped", "err", failed)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	s.events.close() // parked polls answer too, when Shutdown left none waiting in handlers
	s.stopParking(shutdownCtx)
	if msrv != nil {
		msrv.Shutdown(shutdownCtx)
	}
	admin.Close()
	stop()
	running.Wait()
	if err := st.close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	log.Info("stopped")
	return failed
}

// httpServer is the server zulite serves HTTP with, and the listener it
// serves: ln within the connection bounds, TLS over that when configured,
// and the parking listener outermost (parking.go; unless --park-polls=false),
// outside TLS, serving HTTP/2 or HTTP/1.1 as ServeTLS would.
func (s *server) httpServer(ln net.Listener, o options, tlsConfig *tls.Config, log *slog.Logger) (*http.Server, net.Listener) {
	limited := conns.NewLimiter(ln, o.MaxConns, s.trusts)
	s.metrics.connsRefused, s.metrics.openConns = &limited.Refused, limited.Count
	handler := s.routes()
	if tlsConfig != nil {
		handler = strictTransport(handler)
	}
	srv := &http.Server{
		Handler:           conns.Serving(handler, o.BodyWait),
		ConnContext:       conns.ConnContext,
		ReadHeaderTimeout: o.HeaderWait,
		ReadTimeout:       o.BodyWait,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:         limited.ConnState,
	}
	srv.RegisterOnShutdown(s.events.close) // waiting long polls answer at once
	s.bodyWait = o.BodyWait
	var outer net.Listener = limited
	if tlsConfig != nil {
		outer = conns.ServingTLS(limited, tlsConfig)
	}
	if !o.ParkPolls { // --park-polls=false: every poll waits in its handler
		s.metrics.parkedPolls = &s.parked
		return srv, outer
	}
	return srv, s.startParking(outer, srv)
}

// plainHTTPWarning is what to say when API keys would cross a network in
// clear text: plain HTTP on an address other than loopback.
func plainHTTPWarning(addr net.Addr, tls bool) string {
	if tls || isLoopback(addr) {
		return ""
	}
	return "serving plain HTTP on a non-loopback address: API keys and passwords cross the network in clear text; use --tls-cert/--tls-key or --acme-domain"
}

// bootstrap makes the owner account when the database has none, and
// hands its key over once: on stdout and in a zuliprc beside the database.
func bootstrap(st *store, o options, baseURL string, stdout io.Writer) error {
	if any, err := st.hasUsers(); err != nil || any {
		return err
	}
	if err := checkEmail(o.OwnerEmail); err != nil {
		return err
	}
	owner, key, err := st.createUser(o.OwnerEmail, "Owner", roleOwner, false)
	if err != nil {
		return fmt.Errorf("create owner: %w", err)
	}
	// The key is shown before the file is written, so that it is never
	// lost: a failed write still leaves it on the terminal.
	fmt.Fprintf(stdout, "Created the owner account.\nemail: %s\nkey: %s\n", owner.Email, key)
	// zuliprc beside the database, unless one is there already: it holds
	// another database's (or another tool's) credentials, so the new ones
	// go into a file named for this database.
	rc := filepath.Join(filepath.Dir(o.DB), "zuliprc")
	if _, err := os.Lstat(rc); err == nil {
		rc = o.DB + ".zuliprc"
		if _, err := os.Lstat(rc); err == nil {
			fmt.Fprintf(stdout, "zuliprc and %s exist already and were left alone: the key above is the only copy.\n", rc)
			return nil
		}
		fmt.Fprintf(stdout, "A zuliprc beside the database holds other credentials and was left alone.\n")
	}
	if err := writeZuliprc(rc, owner.Email, key, baseURL); err != nil {
		return fmt.Errorf("write %s: %w (the key above is the only copy; 'zulite user key %s' makes a new one)", rc, err, owner.Email)
	}
	fmt.Fprintf(stdout, "These credentials are also in %s (mode 0600).\n", rc)
	return nil
}

// isLoopback reports whether a listener's address is on the loopback.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

func isUnspecified(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsUnspecified()
}

// reachableAddr is host:port for a URL clients can use: the listener's
// address, or, when it listens on every address (0.0.0.0 or ::), this
// machine's name if it resolves to an address other than loopback, else
// its first address other than loopback ("[::]:9991" is no URL).
func reachableAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	port := strconv.Itoa(tcp.Port)
	if name, err := os.Hostname(); err == nil {
		if ips, err := net.LookupIP(name); err == nil && slices.ContainsFunc(ips, func(ip net.IP) bool { return !ip.IsLoopback() }) {
			return net.JoinHostPort(name, port)
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() && ipn.IP.To4() != nil {
				return net.JoinHostPort(ipn.IP.String(), port)
			}
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}
