package foreign

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// EchoNote is the Note of an echo peer: why its replies split nothing by
// direction.
const EchoNote = "an echo service returns the bytes it got and nothing else: no times of its own and no count, so neither one-way delays nor loss per direction can be told"

// Echo is an echo service (RFC 862) over a connected UDP socket, adapted
// to volley's messages. The service returns each datagram as it came, so
// a probe goes out as it is and comes back as itself: Read turns it into
// the reply to it, with the probe's Token, Seq and T1, no times of the
// service's own (T2 = T3 = 0) and no count (Received 0).
//
// Write and Read may be called from two goroutines at once (an open-loop
// sender and its receiver), as on the socket itself.
type Echo struct {
	conn transport.Conn
	// token is the session token of the probes written (0: none yet):
	// an echoed datagram with another is not this run's.
	token atomic.Uint64
}

// NewEcho returns conn, a connected UDP socket to an echo service, as an
// Echo. Closing the Echo closes conn.
func NewEcho(conn transport.Conn) *Echo {
	return &Echo{conn: conn}
}

// Write sends the probe b as it is: the service returns it verbatim.
func (e *Echo) Write(b []byte) (int, error) {
	var h wire.Header
	if h.Decode(b) == nil && h.Type == wire.TypeProbe && e.token.Load() != h.Token {
		e.token.Store(h.Token)
	}
	return e.conn.Write(b)
}

// Read reads the next datagram into b and, when it is a probe of this run
// come back, turns it into the reply to that probe in place. Anything
// else (not a volley probe, or a probe with another session token) is
// returned as an empty message, which the client counts as an error.
func (e *Echo) Read(b []byte) (int, error) {
	n, err := e.conn.Read(b)
	if err != nil {
		return n, err
	}
	var h wire.Header
	token := e.token.Load()
	if h.Decode(b[:n]) != nil || h.Type != wire.TypeProbe || token == 0 || h.Token != token {
		return 0, nil
	}
	h.Type = wire.TypeReply
	h.Flags &= wire.FlagWarmup // a reply's other flags say what the service did not do
	h.T2, h.T3 = 0, 0
	h.Received = 0
	h.ReplySize, h.HoldMicro = 0, 0
	h.TTL, h.TClass = 0, 0
	_ = h.Encode(b) // b holds the header: Decode said so
	return n, nil
}

// SetReadDeadline sets the socket's read deadline.
func (e *Echo) SetReadDeadline(t time.Time) error { return e.conn.SetReadDeadline(t) }

// LocalAddr returns the socket's local address.
func (e *Echo) LocalAddr() net.Addr { return e.conn.LocalAddr() }

// RemoteAddr returns the echo service's address.
func (e *Echo) RemoteAddr() net.Addr { return e.conn.RemoteAddr() }

// Close closes the socket.
func (e *Echo) Close() error { return e.conn.Close() }

// SetWriteDeadline sets the write deadline of the socket, when it has one
// (the client bounds every write).
func (e *Echo) SetWriteDeadline(t time.Time) error { return transport.SetWriteDeadline(e.conn, t) }

// Peer says what an echo service's replies carry: the round trip only.
func (e *Echo) Peer() *result.Peer { return &result.Peer{Protocol: "echo"} }

// PeerResults says why the run has nothing but round trips.
func (e *Echo) PeerResults() *result.PeerResults { return &result.PeerResults{Note: EchoNote} }
