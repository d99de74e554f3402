package cli

import (
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/quota"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/units"
)

// limitFlags are the server's bounds on what peers may take: memory,
// connections and sessions, in all and per source.
type limitFlags struct {
	memory             byteSize
	conns, connsPerSrc int
	sessionsPerSource  int
	sendTimeout        time.Duration
	handshakeTimeout   time.Duration
}

// Defaults: one source (an IPv4 address, an IPv6 /64, a Unix user) may
// take half the memory and a sixteenth of the connections.
const (
	defaultMaxMemory = 64 << 20
	defaultMaxConns  = 1024
)

func (l *limitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	l.memory = defaultMaxMemory
	fl.Var(&l.memory, "max-memory", "memory for peers' buffers, held replies and one-way histograms (K, M, G suffixes); one source may take half, and requests beyond it are refused with the reason")
	fl.IntVar(&l.conns, "max-conns", defaultMaxConns, "most TCP and Unix stream connections at once, each listener; more are refused with the reason")
	fl.IntVar(&l.connsPerSrc, "max-conns-per-source", defaultMaxConns/16, "most stream connections from one source (an IPv4 address, an IPv6 /64, a Unix user)")
	fl.IntVar(&l.sessionsPerSource, "max-sessions-per-source", reflector.DefaultMaxSessionsPerSource, "most sessions of one source (an IPv4 address, an IPv6 /64, a Unix user), open or just closed")
	durationVarP(fl, &l.sendTimeout, "send-timeout", "", 2*time.Second, false, "close a stream connection whose peer read nothing of its replies for this long, at least 100ms")
	durationVarP(fl, &l.handshakeTimeout, "handshake-timeout", "", 5*time.Second, false, "close a stream connection that opened no session this long after connecting, at least 100ms (idle ones close after --idle-timeout)")
}

func (l *limitFlags) check() error {
	switch {
	case l.memory < 1<<20:
		return usagef("--max-memory %s: want at least 1M", l.memory)
	case l.conns < 1 || l.connsPerSrc < 1 || l.connsPerSrc > l.conns:
		return usagef("--max-conns %d, --max-conns-per-source %d: want at least 1, and no more per source than in all", l.conns, l.connsPerSrc)
	case l.sessionsPerSource < 1:
		return usagef("--max-sessions-per-source %d: want at least 1", l.sessionsPerSource)
	case l.sendTimeout < minStreamTimeout:
		return usagef("--send-timeout %s: want at least %s", units.FormatDuration(l.sendTimeout), units.FormatDuration(minStreamTimeout))
	case l.handshakeTimeout < minStreamTimeout:
		return usagef("--handshake-timeout %s: want at least %s", units.FormatDuration(l.handshakeTimeout), units.FormatDuration(minStreamTimeout))
	}
	return nil
}

// budget returns the budget the flags set, for every listener and
// reflector of the server. Unless the reflector shares its process
// (volley agent, whose monitor needs memory of its own: a heap past the
// limit made its GC run without pause, 1.6 cores at 100 targets), it
// also tells the Go runtime to keep its memory near what the budget
// allows, and 16 MiB for the rest: it collects the garbage a buffer's
// growth leaves sooner than it would.
func (l *limitFlags) budget(shared bool) *quota.Memory {
	if shared {
		return quota.NewMemory(int64(l.memory), int64(l.memory)/2)
	}
	debug.SetMemoryLimit(int64(l.memory) + 16<<20)
	// A buffer that grows leaves the one it outgrew: collect when the
	// heap has grown by a quarter, not doubled. The reflector's own
	// paths allocate nothing, so this costs nothing until peers make it.
	debug.SetGCPercent(25)
	return quota.NewMemory(int64(l.memory), int64(l.memory)/2)
}

// stream returns the stream listeners' limits.
func (l *limitFlags) stream(idle time.Duration, mem *quota.Memory) transport.StreamLimits {
	return transport.StreamLimits{MaxConns: l.conns, MaxConnsPerSource: l.connsPerSrc, IdleTimeout: idle,
		SendTimeout: l.sendTimeout, HandshakeTimeout: l.handshakeTimeout, Memory: mem}
}
