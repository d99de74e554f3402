package foreign

// PLACEHOLDERS of the STAMP and connect adapters, written by other
// branches (stamp: stamp.go; connect: connect.go) to the names agreed
// here, so that the command line can be wired before they land. This file
// goes when they do: their declarations replace these.

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/stamp"
	"github.com/volley-net/volley/internal/transport"
)

// errPending is what the placeholders answer.
var errPending = errors.New("foreign: this peer's adapter is not built yet")

// STAMPConfig is how a STAMP Session-Sender runs: Key, when set, the HMAC
// key of RFC 8762's authenticated mode; SSID the Session-Sender Identifier
// (RFC 8972); Stateful that the reflector numbers its replies itself;
// Warmup that the run sends warm-up probes; Err the error estimate sent.
type STAMPConfig struct {
	Key      []byte
	SSID     uint16
	Stateful bool
	Warmup   bool
	Err      stamp.ErrorEstimate
}

// STAMP is a STAMP Session-Sender over a connected UDP socket.
type STAMP struct{ conn transport.Conn }

// NewSTAMP returns conn, a connected UDP socket to a STAMP reflector, as
// a STAMP.
func NewSTAMP(conn transport.Conn, _ STAMPConfig) *STAMP { return &STAMP{conn: conn} }

// Write sends the probe b as a STAMP test packet.
func (s *STAMP) Write([]byte) (int, error) { return 0, errPending }

// Read reads the next reflected packet as a volley reply.
func (s *STAMP) Read([]byte) (int, error) { return 0, errPending }

// SetReadDeadline sets the socket's read deadline.
func (s *STAMP) SetReadDeadline(t time.Time) error { return s.conn.SetReadDeadline(t) }

// LocalAddr returns the socket's local address.
func (s *STAMP) LocalAddr() net.Addr { return s.conn.LocalAddr() }

// RemoteAddr returns the reflector's address.
func (s *STAMP) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

// Close closes the socket.
func (s *STAMP) Close() error { return s.conn.Close() }

// Peer says what a STAMP reflector's replies carry.
func (s *STAMP) Peer() *result.Peer { return &result.Peer{Protocol: "stamp", OneWay: true} }

// ConnectConfig is how a connect:// run dials: Addr the service, Local
// the address to dial from (--bind; the zero value: any), Timeout how
// long a handshake may take, Options those of every socket, MaxOpen the
// most handshakes open at once (0: a default).
type ConnectConfig struct {
	Addr    netip.AddrPort
	Local   netip.AddrPort
	Timeout time.Duration
	Options sockopt.Options
	MaxOpen int
}

// Connect times TCP handshakes to one service, a connection a probe.
type Connect struct{ cfg ConnectConfig }

// NewConnect returns a Connect to cfg.Addr; no connection is made until
// the first probe.
func NewConnect(cfg ConnectConfig) (*Connect, error) { return &Connect{cfg: cfg}, nil }

// Write starts the handshake of the probe b.
func (c *Connect) Write([]byte) (int, error) { return 0, errPending }

// Read returns the next handshake ended, as a volley reply.
func (c *Connect) Read([]byte) (int, error) { return 0, errPending }

// SetReadDeadline sets the deadline of Read.
func (c *Connect) SetReadDeadline(time.Time) error { return nil }

// LocalAddr returns the address connections are made from.
func (c *Connect) LocalAddr() net.Addr { return &net.TCPAddr{} }

// RemoteAddr returns the service's address.
func (c *Connect) RemoteAddr() net.Addr { return &net.TCPAddr{} }

// Close ends the handshakes in progress.
func (c *Connect) Close() error { return nil }

// Peer says what a connect:// run's handshakes carry.
func (c *Connect) Peer() *result.Peer {
	return &result.Peer{Protocol: "connect", Connect: &result.ConnectPeer{}}
}
