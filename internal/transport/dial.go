// Opening a client's connection to a target.

package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport/dbus"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/udp"
	"github.com/volley-net/volley/internal/transport/unixgram"
)

// DialOptions are how a client's socket is made.
type DialOptions struct {
	// Family is "4" or "6" to use only IPv4 or IPv6 ("": either).
	Family string
	// Bind is the local address (ADDR or ADDR:PORT) to send from.
	Bind string
	// Socket options; see package sockopt.
	Socket sockopt.Options
}

// Dial opens a connection to t with the system's defaults (and volley's
// socket buffers).
func Dial(ctx context.Context, t Target) (Conn, error) {
	return DialWith(ctx, t, DialOptions{Socket: sockopt.Options{TOS: -1}})
}

// DialWith opens a connection to t as o says. A stamp:// or echo:// target
// is dialed as udp:// is, and the caller speaks the peer's protocol over
// it (package foreign); a connect:// target is not dialed here, since each
// of its probes is a connection of its own.
func DialWith(ctx context.Context, t Target, o DialOptions) (Conn, error) {
	ip := t.Datagram() || t.Scheme == "tcp"
	if !ip && (o.Family != "" || o.Bind != "" || o.Socket != (sockopt.Options{TOS: -1})) {
		return nil, fmt.Errorf("%w: -4, -6, --bind and the IP and TCP socket options are for udp://, tcp://, stamp:// and echo:// targets", ErrBadTarget)
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	scheme := t.Scheme
	if t.Datagram() {
		scheme = "udp"
	}
	network := scheme + o.Family
	if ip {
		d.Control = o.Socket.Control
	}
	if o.Bind != "" {
		host, port, err := net.SplitHostPort(o.Bind)
		if err != nil {
			host, port = strings.Trim(o.Bind, "[]"), "0"
		}
		local := net.JoinHostPort(host, port)
		var la net.Addr
		if scheme == "udp" {
			la, err = net.ResolveUDPAddr(network, local)
		} else {
			la, err = net.ResolveTCPAddr(network, local)
		}
		if err != nil {
			return nil, fmt.Errorf("--bind %s: %w", o.Bind, err)
		}
		d.LocalAddr = la
	}
	switch scheme {
	case "udp":
		c, err := udp.DialWith(ctx, d, network, t.Address(), o.Socket.Buffer == 0)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", t, err)
		}
		return c, nil
	case "tcp", "unix":
		c, err := stream.DialWith(ctx, d, network, t.Address())
		if err != nil {
			if errno := syscall.Errno(0); errors.As(err, &errno) && (errno == syscall.ECONNREFUSED || errno == syscall.ENOENT) {
				return nil, fmt.Errorf("connect to %s: %w (nothing listens there)", t, errno)
			}
			return nil, fmt.Errorf("connect to %s: %w", t, err)
		}
		if t.Scheme == "tcp" && o.Socket.NoDelayOff {
			// Go turns Nagle off as it connects; turn it back on.
			if err := c.SetNoDelay(false); err != nil {
				c.Close()
				return nil, fmt.Errorf("--nodelay=false: %w", err)
			}
		}
		return c, nil
	case "unixgram":
		c, err := unixgram.Dial(t.Path)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", t, err)
		}
		return c, nil
	case "dbus":
		c, err := dbus.Dial(t.Path, t.Host)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", t, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedScheme, t.Scheme)
}
