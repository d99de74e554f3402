package load

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/quota"
)

// The reflector's side: a Server grants streams within its limits and
// serves each granted one on the connection that asked for it.

// Defaults and bounds of a Server.
const (
	// DefaultMaxRate is the most a reflector sends over all its download
	// streams, in bits/s, unless told otherwise (--max-load-rate's
	// default).
	DefaultMaxRate = 1e9
	// LowestMaxRate and HighestMaxRate bound --max-load-rate, in bits/s:
	// below a kilobyte a second a chunk waits more than a second, and
	// above a terabit a cap is none in practice.
	LowestMaxRate  = 8e3
	HighestMaxRate = 1e12
	// MaxStreams bounds the streams served at once, and
	// MaxStreamsPerSource those of one source (quota.Source).
	MaxStreams          = 64
	MaxStreamsPerSource = 16
	// DefaultSendTimeout cuts a stream that made no progress for this
	// long: a download whose client does not read, an upload whose
	// client sends nothing.
	DefaultSendTimeout = 2 * time.Second
)

// upBuf is the buffer an upload is read and discarded into: fixed, so
// that memory grows with the streams served, never with bytes received.
const upBuf = 32 << 10

// zeros is what every download sends: read-only, shared by all.
var zeros [maxChunk]byte

// ServerConfig says what a reflector's Server allows.
type ServerConfig struct {
	// MaxRate bounds the bits/s sent over all download streams together,
	// as --max-load-rate does: 0 (or less) for no limit, and at most
	// HighestMaxRate (a higher rate is taken as it). DefaultMaxRate is
	// the flag's default, not this field's: the zero value sends
	// unpaced.
	MaxRate float64
	// MaxStreams and MaxStreamsPerSource bound the streams served at
	// once, in all and per source (0: the package's bounds, which they
	// may only lower).
	MaxStreams, MaxStreamsPerSource int
	// SendTimeout cuts a stream that made no progress for this long (0:
	// DefaultSendTimeout): the stream listener's send timeout.
	SendTimeout time.Duration
}

// Server serves the load streams of a reflector, or of all the
// reflectors of a process (one per transport), which then share its
// limits and its rate. It is safe for concurrent use.
type Server struct {
	cfg     ServerConfig
	rate    float64 // bytes/s; 0: no limit
	chunk   int
	bucket  *bucket
	streams *quota.Counter

	open                            atomic.Int64
	sent, received, served, refused atomic.Uint64
}

// NewServer returns a Server for cfg, its defaults filled in.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxRate > 0 {
		cfg.MaxRate = min(cfg.MaxRate, HighestMaxRate)
	} else {
		cfg.MaxRate = 0 // none; also NaN
	}
	if cfg.MaxStreams <= 0 || cfg.MaxStreams > MaxStreams {
		cfg.MaxStreams = MaxStreams
	}
	if cfg.MaxStreamsPerSource <= 0 || cfg.MaxStreamsPerSource > MaxStreamsPerSource {
		cfg.MaxStreamsPerSource = MaxStreamsPerSource
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	rate := cfg.MaxRate / 8
	chunk := chunkFor(rate)
	// A hundredth of a second's worth, and at least a chunk per stream
	// that may wait: the streams start together without a first burst
	// beyond the cap.
	burst := max(rate/100, float64(chunk))
	return &Server{cfg: cfg, rate: rate, chunk: chunk, bucket: newBucket(rate, burst),
		streams: quota.NewCounter(cfg.MaxStreams, cfg.MaxStreamsPerSource)}
}

// RateLimit returns the cap on what the server sends, in bits/s (0:
// none), as a LoadAck carries it.
func (s *Server) RateLimit() uint64 { return uint64(s.cfg.MaxRate) }

// Counters are what a Server moved since it started.
type Counters struct {
	Streams        int    // served now
	Served         uint64 // streams granted
	Refused        uint64 // streams refused for the limits
	Sent, Received uint64 // payload bytes of downloads, and of uploads
}

// Counters returns what s moved so far.
func (s *Server) Counters() Counters {
	return Counters{Streams: int(s.open.Load()), Served: s.served.Load(), Refused: s.refused.Load(),
		Sent: s.sent.Load(), Received: s.received.Load()}
}

// ErrStreams: the server serves as many streams as it takes, in all or
// from the asking source.
var ErrStreams = errors.New("load: too many load streams")

// ErrDuration: a stream asked for no time at all.
var ErrDuration = errors.New("load: a stream of no duration")

// Grant is a stream a Server granted: it holds its place in the limits
// until Serve has served it, or Release gave it back.
type Grant struct {
	Dir      Direction
	Duration time.Duration // at most MaxDuration and what was asked
	s        *Server
	src      netip.Prefix
	once     sync.Once
}

// Grant takes a place for a stream of dir from the peer at from, lasting
// what it asked for within MaxDuration: ErrStreams when there is none,
// ErrDuration for a stream of no time.
func (s *Server) Grant(from netip.AddrPort, dir Direction, asked time.Duration) (*Grant, error) {
	if asked <= 0 {
		return nil, ErrDuration
	}
	if dir != Up && dir != Down {
		return nil, errors.New("load: no such direction")
	}
	src := quota.Source(from)
	if s.streams.Take(src) != quota.OK {
		s.refused.Add(1)
		return nil, ErrStreams
	}
	s.served.Add(1)
	s.open.Add(1)
	return &Grant{Dir: dir, Duration: min(asked, MaxDuration), s: s, src: src}, nil
}

// Release gives g's place back; Serve does it when it returns, and later
// calls do nothing.
func (g *Grant) Release() {
	g.once.Do(func() {
		g.s.streams.Give(g.src)
		g.s.open.Add(-1)
	})
}

// ErrStalled: a stream made no progress for the send timeout (a download
// whose client does not read, an upload whose client sends nothing).
var ErrStalled = errors.New("load: the stream made no progress within the send timeout")

// Serve moves g's stream on c from now until its duration ends or the
// client closes, then gives g's place back; the caller closes c. It
// returns nil then, ErrStalled for a client that stopped reading or
// sending, or the connection's error. Every read and write has a deadline.
func (g *Grant) Serve(c net.Conn) error {
	defer g.Release()
	end := time.Now().Add(g.Duration)
	var err error
	if g.Dir == Down {
		err = g.s.send(c, end)
	} else {
		err = g.s.receive(c, end)
	}
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return nil // the end, or the client closed
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !time.Now().Before(end) {
			return nil // the grant ended during a read or write
		}
		return ErrStalled
	}
	return err
}

// send writes zeros on c until end, each chunk when the rate bucket lets
// it; a write that makes no progress within the send timeout cuts the
// stream.
func (s *Server) send(c net.Conn, end time.Time) error {
	var scratch [512]byte // what a client sends on its download, dropped
	for {
		now := time.Now()
		if !now.Before(end) {
			return nil
		}
		if wait := s.bucket.reserve(s.chunk, now.UnixNano()); wait > 0 {
			at := now.Add(wait)
			if !at.Before(end) {
				s.bucket.give(s.chunk)
				return nil
			}
			if err := waitOn(c, at, scratch[:]); err != nil {
				s.bucket.give(s.chunk) // none of it will go
				return err
			}
		}
		// A write that fails (the client gone, or the connection closed
		// by the listener, as after a LoadAck it could not send) gives
		// back what it did not send: a stream that ends leaves no debt
		// for the others to wait out.
		if n, err := s.write(c, zeros[:s.chunk], end); err != nil {
			s.bucket.give(s.chunk - n)
			return err
		}
	}
}

// write writes b on c, each write within the send timeout (or by end);
// a write cut by its deadline after some progress goes on. It returns
// the bytes written, all of b unless it fails.
func (s *Server) write(c net.Conn, b []byte, end time.Time) (int, error) {
	written := 0
	for written < len(b) {
		if err := c.SetWriteDeadline(earlier(time.Now().Add(s.cfg.SendTimeout), end)); err != nil {
			return written, err
		}
		n, err := c.Write(b[written:])
		s.sent.Add(uint64(n))
		written += n
		if err != nil && (n == 0 || !errors.Is(err, os.ErrDeadlineExceeded)) {
			return written, err
		}
	}
	return written, nil
}

// waitOn waits until at by reading c (what comes is dropped into
// scratch), so that a connection closed meanwhile, by its client or by
// the listener, ends the wait at once.
func waitOn(c net.Conn, at time.Time, scratch []byte) error {
	for {
		if err := c.SetReadDeadline(at); err != nil {
			return err
		}
		_, err := c.Read(scratch)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// receive reads c into a fixed buffer and drops what it read, until end,
// each read within the send timeout.
func (s *Server) receive(c net.Conn, end time.Time) error {
	buf := make([]byte, upBuf)
	for {
		now := time.Now()
		if !now.Before(end) {
			return nil
		}
		if err := c.SetReadDeadline(earlier(now.Add(s.cfg.SendTimeout), end)); err != nil {
			return err
		}
		n, err := c.Read(buf)
		s.received.Add(uint64(n))
		if err != nil {
			return err
		}
	}
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
