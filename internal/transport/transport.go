// Package transport defines the sockets volley's client and reflector
// measure through, and opens them by target: "host[:port]" or a URL such as
// "udp://host:port". The implementations live in packages below this one;
// faster engines (busy polling, batched I/O, kernel timestamps) replace them
// behind these interfaces without touching statistics or reports.
package transport

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/unixgram"
)

// DefaultPort is the port volley's reflector listens on unless told otherwise.
const DefaultPort = 7766

// Conn is the client's message-oriented connection to one reflector. Read
// returns one whole message.
type Conn interface {
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	SetReadDeadline(t time.Time) error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	Close() error
}

// PacketConn is the reflector's socket, shared by all its sessions.
type PacketConn interface {
	ReadFrom(b []byte) (int, netip.AddrPort, error)
	WriteTo(b []byte, addr netip.AddrPort) (int, error)
	SetReadDeadline(t time.Time) error
	LocalAddr() net.Addr
	Close() error
}

// IsSlowReader reports whether err says a reply was dropped because its
// peer does not read (a stream's queue, or a Unix datagram socket, full).
func IsSlowReader(err error) bool {
	return errors.Is(err, stream.ErrSlowReader) || errors.Is(err, unixgram.ErrSlowReader)
}

// IsPeerGone reports whether err says the peer is gone: its port closed (an
// ICMP port unreachable on a connected UDP socket: ECONNREFUSED), or a
// stream connection ended (EOF), reset (ECONNRESET) or closed under a
// write (EPIPE).
func IsPeerGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}
