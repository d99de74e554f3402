// Package load moves bulk data over stream connections between a volley
// client and a volley reflector: the working load of a latency-under-load
// run (volley client --load). The client's side opens streams (Dial, then
// Start at the phase's beginning, Stop at its end); the reflector's side
// serves them within its limits (see Server).
//
// A stream is a TCP (or Unix stream) connection to the reflector's stream
// listener that runs a session's handshake (Hello, Cookie), then asks for
// load with a TypeLoad message (wire.FlagLoadDown: the reflector sends;
// without: it receives) and the duration it wants. The reflector answers
// TypeLoadAck with what it grants (the duration, its rate cap) or refuses
// with a TypeError; after the grant the connection carries raw bytes one
// way until the duration ends or either end closes.
//
// Memory: the buffers of the bytes moved are fixed and outside the
// reflector's --max-memory budget (which holds its replies and
// sessions), but bounded: an upload the reflector serves reads into 32
// KiB, so at most MaxStreams x 32 KiB (2 MiB) in all, and a download
// sends from one shared read-only buffer; a client's download reads into
// 128 KiB per stream, 64 streams at most.
package load

import (
	"context"
	"net"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// Direction is which way a stream's data moves.
type Direction uint8

// The directions.
const (
	Up   Direction = 1 // the client sends, the reflector receives
	Down Direction = 2 // the reflector sends, the client receives
)

// String returns "up" or "down".
func (d Direction) String() string {
	switch d {
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return "invalid"
}

// MaxDuration is the longest stream a reflector grants.
const MaxDuration = 5 * time.Minute

// Dialer says how a client reaches the reflector's stream listener.
type Dialer struct {
	// Network is "tcp" or "unix"; Address the reflector's.
	Network, Address string
	// Key signs the handshake when the reflector has one.
	Key []byte
	// Connect, when set, dials instead of a net.Dialer (socket options).
	Connect func(ctx context.Context, network, address string) (net.Conn, error)
	// Timeout bounds the dial and each step of the handshake (5 s unless
	// set).
	Timeout time.Duration
}

// Refused is a reflector's refusal of a stream (or of the session it
// opens first): Code is the refusal's, Reason says what it means.
type Refused struct {
	Reason string
	Code   wire.ErrorCode
}

// Error says that the reflector refused, and why.
func (r *Refused) Error() string { return "load: refused by the reflector: " + r.Reason }
