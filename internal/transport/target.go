// Targets: what a client measures, parsed from the command line.

package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/volley-net/volley/internal/transport/dbus"
)

// Errors from ParseTarget.
var (
	ErrBadTarget         = errors.New("transport: bad target")
	ErrUnsupportedScheme = errors.New("transport: scheme not supported yet")
)

// Target is a parsed measurement target.
type Target struct {
	Scheme string // "udp", "tcp", "unix", "unixgram" or "dbus"
	Host   string // host name or IP literal, without brackets; the reflector's name on a bus
	Port   int
	Path   string // of a Unix socket; the bus: "session", "system" or a D-Bus address
}

// Address returns host:port, with brackets around IPv6 literals, or the
// path of a Unix socket.
func (t Target) Address() string {
	if t.Path != "" {
		return t.Path
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// String returns the target as a URL, such as udp://[::1]:7766 or
// unix:///run/volley.sock.
func (t Target) String() string {
	if t.Scheme == "dbus" {
		s := "dbus://" + t.Path
		if strings.Contains(t.Path, ":") {
			s = "dbus:" + t.Path // an address
		}
		if t.Host != dbus.DefaultName {
			s += "#" + t.Host
		}
		return s
	}
	return t.Scheme + "://" + t.Address()
}

// Stream reports whether the target's transport is a stream (TCP, Unix).
func (t Target) Stream() bool { return t.Scheme == "tcp" || t.Scheme == "unix" }

// ParseTarget parses "host", "host:port", "[v6]:port", a bare IPv6 literal,
// "udp://host[:port]", "tcp://host[:port]", "unix:///path" or
// "unixgram:///path", "dbus://session", "dbus://system" or "dbus:ADDRESS"
// (a D-Bus address such as unix:path=/run/bus), each D-Bus form optionally
// followed by "#NAME" for a reflector name other than dbus.DefaultName.
// The port defaults to DefaultPort.
func ParseTarget(s string) (Target, error) {
	t := Target{Scheme: "udp", Port: DefaultPort}
	if bus, ok := strings.CutPrefix(s, "dbus:"); ok {
		bus, name, _ := strings.Cut(bus, "#")
		if b, ok := strings.CutPrefix(bus, "//"); ok {
			bus = strings.TrimSuffix(b, "/")
			if bus != "session" && bus != "system" {
				return t, fmt.Errorf("%w %q: want dbus://session, dbus://system or dbus:ADDRESS", ErrBadTarget, s)
			}
		}
		if name == "" {
			name = dbus.DefaultName
		}
		if _, err := dbus.Address(bus); err != nil && bus != "session" {
			return t, fmt.Errorf("%w %q: %v", ErrBadTarget, s, err)
		}
		return Target{Scheme: "dbus", Path: bus, Host: name}, nil
	}
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		rest = after
		switch {
		case scheme == "udp" || scheme == "tcp":
			t.Scheme = scheme
		case scheme == "unix" || scheme == "unixgram":
			if !strings.HasPrefix(after, "/") && !strings.HasPrefix(after, "@") {
				return t, fmt.Errorf("%w %q: want %s:///absolute/path (or %s://@abstract)", ErrBadTarget, s, scheme, scheme)
			}
			return Target{Scheme: scheme, Path: after}, nil
		default:
			return t, fmt.Errorf("%w %q: unknown scheme %q (want udp://, tcp://, unix://, unixgram:// or dbus://, or HOST[:PORT])", ErrBadTarget, s, scheme)
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		if t.Scheme == "tcp" {
			return t, fmt.Errorf("%w %q: no host (want tcp://HOST[:PORT])", ErrBadTarget, s)
		}
		return t, fmt.Errorf("%w %q: no host (want udp://HOST[:PORT] or HOST[:PORT])", ErrBadTarget, s)
	}
	if strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]") {
		rest = rest[1 : len(rest)-1]
		if _, err := netip.ParseAddr(rest); err != nil {
			return t, fmt.Errorf("%w %q: bad address in brackets", ErrBadTarget, s)
		}
	}
	if a, err := netip.ParseAddr(rest); err == nil {
		// A bare IP literal, IPv6 without brackets included.
		t.Host = a.String()
		return t, nil
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		if strings.Contains(rest, "[") || strings.Contains(rest, "]") || strings.Contains(rest, ":") {
			return t, fmt.Errorf("%w %q: %v", ErrBadTarget, s, err)
		}
		host, port = rest, ""
	}
	if host == "" || strings.ContainsAny(host, "/?# ") {
		return t, fmt.Errorf("%w %q: bad host %q (a Unix socket is unix:///PATH)", ErrBadTarget, s, host)
	}
	t.Host = host
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return t, fmt.Errorf("%w %q: bad port %q (want 1 to 65535)", ErrBadTarget, s, port)
		}
		t.Port = p
	}
	return t, nil
}
