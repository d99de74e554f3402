package exporter

import (
	"context"
	"errors"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volley-net/volley/internal/quota"
)

// Limits are the metrics server's timeouts and bounds.
type Limits struct {
	// ReadHeaderTimeout is how long a client has to send its request's
	// headers; ReadTimeout its whole request.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// WriteTimeout is how long a response may take to write, from the
	// end of the request's headers (a probe's measurement included).
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection waits for its next
	// request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxConns bounds the connections open at once, MaxConnsPerSource
	// those of one source (an IPv4 address, an IPv6 /64): one past
	// either is closed as it is accepted.
	MaxConns, MaxConnsPerSource int
}

// DefaultLimits returns the server's limits: headers within 5s, the
// request within 10s, the response within 30s, 60s idle, 8 KiB of
// headers, 64 connections in all and 8 per source.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    8 << 10,
		MaxConns:          64,
		MaxConnsPerSource: 8,
	}
}

// orDefault returns l with each zero field set to its default.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	set(&l.ReadTimeout, d.ReadTimeout)
	set(&l.WriteTimeout, d.WriteTimeout)
	set(&l.IdleTimeout, d.IdleTimeout)
	for _, p := range []struct {
		v   *int
		def int
	}{
		{&l.MaxHeaderBytes, d.MaxHeaderBytes}, {&l.MaxConns, d.MaxConns}, {&l.MaxConnsPerSource, d.MaxConnsPerSource},
	} {
		if *p.v <= 0 {
			*p.v = p.def
		}
	}
	return l
}

// maxScrapes bounds the /metrics requests gathered at once; one more is
// answered 503.
const maxScrapes = 8

// Server serves /metrics (what Gatherer gathers, in the format the
// scraper asks for: text, OpenMetrics or protobuf, the last with native
// histograms), /probe (Prober's, off when it is nil or allows nothing) and
// an index page at /, to GET and HEAD only.
type Server struct {
	// Gatherer is what /metrics serves: see NewRegistry.
	Gatherer prometheus.Gatherer
	// Prober answers /probe; nil: /probe is off.
	Prober *Prober
	// Limits are the server's; a zero field takes its default.
	Limits Limits
}

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	metrics := promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		EnableOpenMetrics:   true,
		MaxRequestsInFlight: maxScrapes,
	})
	// A "GET" pattern matches HEAD too; the mux answers other methods
	// 405 and other paths 404.
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /probe", s.Prober)
	mux.HandleFunc("GET /{$}", s.index)
	return mux
}

// index writes a page that links to what the server serves.
func (s *Server) index(w http.ResponseWriter, _ *http.Request) {
	probe := "<p>/probe is off: start with --probe-allow to turn it on.</p>"
	if s.Prober.enabled() {
		probe = `<p><a href="/probe?target=udp://127.0.0.1:7766">/probe?target=URL&amp;count=N&amp;rate=R</a>: one burst of probes (blackbox-exporter style), to ` + html.EscapeString(s.Prober.allowed()) + `</p>`
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!DOCTYPE html>
<html><head><title>volley</title></head><body>
<h1>volley</h1>
<p><a href="/metrics">/metrics</a>: the monitor's targets and health</p>
`+probe+`
</body></html>
`)
}

// Serve serves on ln until ctx is done, then closes ln, waits a little
// for the requests under way (a measurement under way in /probe is
// cancelled), closes every connection and returns nil; or returns the
// error that stopped it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	l := s.Limits.orDefault()
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0), // a peer's bad request is no event
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(LimitListener(ln, l.MaxConns, l.MaxConnsPerSource)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Handlers see ctx done (a probe stops); Shutdown waits for them, and
	// Close cuts what a slow peer still holds.
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if hs.Shutdown(sctx) != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdownWait is how long Serve waits, once its context is done, for the
// requests under way to end.
const shutdownWait = 5 * time.Second

// LimitListener returns ln with its connections bounded: at most max
// open at once (0: no bound), perSource of one source (see quota.Source;
// Unix peers share one). A connection past a bound is closed as it is
// accepted, before anything is read from it.
func LimitListener(ln net.Listener, max, perSource int) net.Listener {
	return &limitListener{Listener: ln, conns: quota.NewCounter(max, perSource)}
}

type limitListener struct {
	net.Listener
	conns *quota.Counter
}

// Accept returns the next connection within the bounds, closing those
// past them.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceOf(c.RemoteAddr())
		if l.conns.Take(src) != quota.OK {
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, conns: l.conns, src: src}, nil
	}
}

// sourceOf returns the source of a peer's address; the zero prefix for
// one that is not IP (a Unix peer).
func sourceOf(a net.Addr) netip.Prefix {
	switch a := a.(type) {
	case *net.TCPAddr:
		return quota.Source(a.AddrPort())
	case *net.UDPAddr:
		return quota.Source(a.AddrPort())
	}
	return netip.Prefix{}
}

// limitedConn is a connection counted against its source until closed.
type limitedConn struct {
	net.Conn
	conns *quota.Counter
	src   netip.Prefix
	once  sync.Once
}

// Close closes the connection, and counts it no more.
func (c *limitedConn) Close() error {
	c.once.Do(func() { c.conns.Give(c.src) })
	return c.Conn.Close()
}
