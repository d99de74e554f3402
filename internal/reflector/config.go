package reflector

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/wire"
)

// The reflector's configuration and its defaults.

// MaxMessage is the largest message the reflector reads over UDP (see
// Config.MaxMessage for others); a longer datagram is cut to this size and
// dropped as oversized.
const MaxMessage = 65535

// Config configures a reflector. The zero value works.
type Config struct {
	// IdleTimeout ends a session that sent nothing for this long
	// (default 30s).
	IdleTimeout time.Duration
	// ReportInterval is how often OnInterval is called (default 1s; a
	// negative value turns interval reports off).
	ReportInterval time.Duration
	// OnInterval receives the counters of each interval. It runs on the
	// reflecting goroutine and must return quickly, and not keep the
	// Counters' distributions (Counters.Add makes copies).
	OnInterval func(Counters)
	// Clock defaults to the system clock. When it has an identity
	// (clock.Identifier), Cookies carry it (wire.FlagClockID).
	Clock clock.Clock
	// Secret keys the cookies; a random one is made when nil.
	Secret []byte
	// MaxMessage is the largest message the transport carries (default
	// the package's MaxMessage, UDP's); stream transports carry more.
	MaxMessage int
	// MaxSize bounds the reply size a probe may ask for (default and
	// most: DefaultMaxSize, or MaxMessage when that is larger than UDP's).
	MaxSize int
	// MaxHold bounds the hold a probe may ask for (default DefaultMaxHold).
	MaxHold time.Duration
	// MaxRate bounds each session's probes/s (default DefaultMaxRate);
	// probes above it are dropped and counted.
	MaxRate float64
	// MaxHeld bounds the replies held at once (default DefaultMaxHeld),
	// a source's at a quarter of it (heldShare) or 64, when more.
	MaxHeld int
	// OnOneWay receives, for each session sending one-way probes, what it
	// received in each report interval, or every ReportEvery probes when
	// that is set (dpong's reporting period). It runs on the reflecting
	// goroutine and must return quickly.
	OnOneWay    func(OneWayReport)
	ReportEvery uint64
	// Key, when set, makes every message carry an HMAC tag (see package
	// wire); messages without a valid one are dropped.
	Key []byte
	// Allow, when not empty, limits clients to these networks.
	Allow []netip.Prefix
	// MaxSessions bounds the sessions kept at once, open or recently
	// closed (default DefaultMaxSessions), and MaxSessionsPerSource those
	// of one source (quota.Source; default DefaultMaxSessionsPerSource).
	MaxSessions, MaxSessionsPerSource int
	// SourceSessions, when set, counts the sessions of each source across
	// several reflectors (a server's transports), for
	// MaxSessionsPerSource; each reflector counts its own otherwise.
	SourceSessions *quota.Counter
	// Memory is the budget held replies and one-way sessions' histograms
	// are taken from (nil: no limit); the stream listener's buffers come
	// from it too.
	Memory *quota.Memory
	// MaxDuration ends sessions this long after they opened: their probes
	// are answered with ErrorDuration (default DefaultMaxDuration).
	MaxDuration time.Duration
	// MaxTotalRate bounds the probes/s of all sessions together (0: none);
	// probes above it are dropped and counted as "rate".
	MaxTotalRate float64
	// Stamps says the socket given to Serve has kernel stamps turned on
	// (transport.Stamper): replies carry the reflector's kernel stamps to
	// clients that ask (wire.Stamps), and response times are measured
	// from them too.
	Stamps bool
	// Log, when set, gets a CSV line per reply sent (see LogHeader):
	// each interval's lines (every ReportInterval, or every IdleTimeout
	// without interval reports), and sooner when they add up to 64 KiB.
	Log *probelog.Writer
	// Load, when set, serves bulk streams (volley client --load) to
	// stream connections, within its limits and rate; one Server shared
	// by every reflector of a process keeps its limits for them all. nil:
	// a stream connection's TypeLoad is refused (wire.ErrorLoad). Over
	// datagrams and buses a TypeLoad is dropped, whatever Load.
	Load *load.Server
}

// Defaults for the reflector's limits.
const (
	DefaultMaxSize = 65000
	DefaultMaxHold = time.Second
	DefaultMaxRate = 1_000_000
	DefaultMaxHeld = 4096
	// DefaultMaxSessions bounds memory: a session with one-way probes
	// keeps a histogram of a few hundred kilobytes.
	DefaultMaxSessions          = 1000
	DefaultMaxSessionsPerSource = 64
	DefaultMaxDuration          = 24 * time.Hour
)

// withDefaults returns cfg with the defaults filled in and the limits
// clamped (WithLimits), and a random cookie secret and a sessions-per-
// source quota of its own when it has none.
func (cfg Config) withDefaults() (Config, error) {
	cfg = cfg.WithLimits()
	if cfg.Secret == nil {
		cfg.Secret = make([]byte, 32)
		if _, err := rand.Read(cfg.Secret); err != nil {
			return cfg, fmt.Errorf("make cookie secret: %w", err)
		}
	}
	if cfg.SourceSessions == nil {
		cfg.SourceSessions = quota.NewCounter(0, cfg.MaxSessionsPerSource)
	}
	return cfg, nil
}

// WithLimits returns cfg with the defaults of its times, clock and limits
// filled in and the limits clamped: what a listener that answers within a
// reflector's limits (the STAMP listener) shares with it.
func (cfg Config) WithLimits() Config {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.ReportInterval == 0 {
		cfg.ReportInterval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewSystem()
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = MaxMessage
	}
	top := DefaultMaxSize
	if cfg.MaxMessage > MaxMessage {
		top = cfg.MaxMessage
	}
	if cfg.MaxSize <= 0 || cfg.MaxSize > top {
		cfg.MaxSize = top
	}
	cfg.MaxSize = max(cfg.MaxSize, wire.HeaderLen)
	if cfg.MaxHold <= 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	if cfg.MaxRate <= 0 {
		cfg.MaxRate = DefaultMaxRate
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxSessionsPerSource <= 0 {
		cfg.MaxSessionsPerSource = DefaultMaxSessionsPerSource
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	return cfg
}
