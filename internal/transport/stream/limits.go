package stream

import (
	"errors"
	"time"

	"github.com/volley-net/volley/internal/quota"
)

// Limits bound what a listener's peers may take. The zero value of a
// field takes its default.
type Limits struct {
	// MaxConns bounds the connections open at once, and
	// MaxConnsPerSource those from one source (defaults 1000 and 64).
	MaxConns, MaxConnsPerSource int
	// HandshakeMessage is the largest message a peer may send before it
	// is admitted (default 1024 bytes).
	HandshakeMessage int
	// HandshakeTimeout closes a connection not admitted this long after
	// it was accepted (default 5s); IdleTimeout one that sent nothing
	// for this long (default 30s).
	HandshakeTimeout, IdleTimeout time.Duration
	// SendTimeout closes a connection whose write made no progress for
	// this long: its peer does not read (default 2s).
	SendTimeout time.Duration
	// Memory is the budget buffers and queued replies are taken from
	// (nil: no limit).
	Memory *quota.Memory
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxConns, 1000)
	def(&l.MaxConnsPerSource, 64)
	def(&l.HandshakeMessage, 1024)
	defDur(&l.HandshakeTimeout, 5*time.Second)
	defDur(&l.IdleTimeout, 30*time.Second)
	defDur(&l.SendTimeout, 2*time.Second)
	return l
}

// Errors of WriteTo, and of a connection closed for its peer's doing.
var (
	ErrSlowReader = errors.New("stream: the peer does not read its replies")
	ErrNoMemory   = errors.New("stream: the memory budget is spent")
)

// Refusal says why a listener refuses a connection or a message.
type Refusal int

// The reasons for a refusal.
const (
	RefusedConns       Refusal = iota + 1 // as many connections as MaxConns
	RefusedSourceConns                    // as many from the peer's source as MaxConnsPerSource
	RefusedMemory                         // the memory budget cannot hold the reply asked for
)
