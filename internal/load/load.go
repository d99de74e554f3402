// Package load moves bulk data over stream connections between a volley
// client and a volley reflector: the working load of a latency-under-load
// run (volley client --load). The client's side opens streams (Dial, then
// Start at the phase's beginning, Stop at its end); the reflector's side
// serves them within its limits (see Serve).
//
// A stream is a TCP (or Unix stream) connection to the reflector's stream
// listener that runs a session's handshake (Hello, Cookie), then asks for
// load with a TypeLoad message (wire.FlagLoadDown: the reflector sends;
// without: it receives) and the duration it wants. The reflector answers
// TypeLoadAck with what it grants (the duration, its rate cap) or refuses
// with a TypeError; after the grant the connection carries raw bytes one
// way until the duration ends or either end closes.
package load

import (
	"context"
	"errors"
	"net"
	"time"
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

// Stream is one bulk stream of a client.
type Stream struct{}

// ErrUnimplemented is returned until the streams are written.
var ErrUnimplemented = errors.New("load: not implemented yet")

// Dial connects to the reflector and opens a session (Hello, Cookie), so
// that Start asks for load at once.
func (d *Dialer) Dial(ctx context.Context) (*Stream, error) { return nil, ErrUnimplemented }

// Start asks the reflector for a stream of dir lasting at most dur, and
// returns once it granted it (data then moves on a goroutine the stream
// owns) or refused it (a *Refused error).
func (s *Stream) Start(ctx context.Context, dir Direction, dur time.Duration) error {
	return ErrUnimplemented
}

// Moved returns the payload bytes delivered so far: received by the client
// (Down), or acknowledged by the reflector's kernel (Up; the bytes written
// where the system cannot tell). Safe to call from any goroutine.
func (s *Stream) Moved() uint64 { return 0 }

// Stop ends the stream and waits for its goroutine. It returns what cut
// the stream short, if anything (nil when it ended because asked, or its
// granted time was up).
func (s *Stream) Stop() error { return nil }

// Refused is a reflector's refusal of a stream.
type Refused struct{ Reason string }

func (r *Refused) Error() string { return "load refused by the reflector: " + r.Reason }
