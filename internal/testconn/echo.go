package testconn

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
)

// Echo is a transport.Conn that has the reflector answer each write at
// once, in the writer's goroutine, and returns that answer at the next
// read: no timers, no copies but the one into the reader's buffer, for
// measuring the client's own per-probe path. The zero Echo is a Conn that
// must not be written to.
type Echo struct {
	refl    *reflector.Reflector
	pending []byte
	n       int
}

var _ transport.Conn = (*Echo)(nil)

// NewEcho returns an Echo to a reflector configured with r, taking
// messages up to size bytes.
func NewEcho(tb testing.TB, r Reflector, size int) *Echo {
	tb.Helper()
	refl, err := r.new(tb)
	if err != nil {
		tb.Fatal(err)
	}
	return &Echo{refl: refl, pending: make([]byte, size)}
}

// Write has the reflector answer b.
func (c *Echo) Write(b []byte) (int, error) {
	copy(c.pending, b)
	// The time must move: the reflector's rate limit refills with it.
	reply := c.refl.Handle(c.pending[:len(b)], netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 1111), time.Now().UnixNano())
	c.n = len(reply)
	return len(b), nil
}

// Read returns the answer to the last write (empty when there was none).
func (c *Echo) Read(b []byte) (int, error) { return copy(b, c.pending[:c.n]), nil }

// SetReadDeadline does nothing: a Read never waits.
func (c *Echo) SetReadDeadline(time.Time) error { return nil }

// LocalAddr returns Local.
func (c *Echo) LocalAddr() net.Addr { return Local }

// RemoteAddr returns Remote.
func (c *Echo) RemoteAddr() net.Addr { return Remote }

// Close does nothing.
func (c *Echo) Close() error { return nil }
