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
	// Scheme is "udp", "tcp", "unix", "unixgram" or "dbus" for a volley
	// reflector, or "stamp", "echo" or "connect" for a peer that is not
	// one (see Foreign).
	Scheme string
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

// Foreign reports whether the target is a peer that is not a volley
// reflector: a STAMP reflector (stamp://), an echo service (echo://) or a
// TCP port whose handshakes are timed (connect://).
func (t Target) Foreign() bool {
	return t.Scheme == "stamp" || t.Scheme == "echo" || t.Scheme == "connect"
}

// Datagram reports whether the target is reached over UDP: a volley
// reflector's udp://, and the foreign stamp:// and echo://.
func (t Target) Datagram() bool {
	return t.Scheme == "udp" || t.Scheme == "stamp" || t.Scheme == "echo"
}

// The foreign schemes' ports when the target gives none: STAMP's (RFC 8762
// section 4.1) and the echo service's (RFC 862). connect:// has none: the
// service's port is the point of it.
const (
	STAMPPort = 862
	EchoPort  = 7
)

// schemes lists the schemes a target may name, for the errors.
const schemes = "udp://, tcp://, unix://, unixgram://, dbus://, stamp://, echo:// or connect://, or HOST[:PORT]"

// ParseTarget parses "host", "host:port", "[v6]:port", a bare IPv6 literal,
// "udp://host[:port]", "tcp://host[:port]", "unix:///path" or
// "unixgram:///path", "dbus://session", "dbus://system" or "dbus:ADDRESS"
// (a D-Bus address such as unix:path=/run/bus), each D-Bus form optionally
// followed by "#NAME" for a reflector name other than dbus.DefaultName;
// or a foreign peer's "stamp://host[:port]" (port STAMPPort unless given),
// "echo://host[:port]" (EchoPort) or "connect://host:port" (the port
// required). The port defaults to DefaultPort.
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
		case scheme == "stamp":
			t.Scheme, t.Port = scheme, STAMPPort
		case scheme == "echo":
			t.Scheme, t.Port = scheme, EchoPort
		case scheme == "connect":
			t.Scheme, t.Port = scheme, 0
		case scheme == "unix" || scheme == "unixgram":
			if !strings.HasPrefix(after, "/") && !strings.HasPrefix(after, "@") {
				return t, fmt.Errorf("%w %q: want %s:///absolute/path (or %s://@abstract)", ErrBadTarget, s, scheme, scheme)
			}
			return Target{Scheme: scheme, Path: after}, nil
		default:
			return t, fmt.Errorf("%w %q: unknown scheme %q (want %s)", ErrBadTarget, s, scheme, schemes)
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		switch t.Scheme {
		case "udp":
			return t, fmt.Errorf("%w %q: no host (want udp://HOST[:PORT] or HOST[:PORT])", ErrBadTarget, s)
		case "connect":
			return t, fmt.Errorf("%w %q: no host (want connect://HOST:PORT)", ErrBadTarget, s)
		}
		return t, fmt.Errorf("%w %q: no host (want %s://HOST[:PORT])", ErrBadTarget, s, t.Scheme)
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
		return t, t.portGiven(s)
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
	return t, t.portGiven(s)
}

// portGiven checks that a connect:// target s has its port: a TCP service
// has no port of its own to default to.
func (t Target) portGiven(s string) error {
	if t.Scheme == "connect" && t.Port == 0 {
		return fmt.Errorf("%w %q: no port (want connect://HOST:PORT: the port of the TCP service whose handshakes are timed)", ErrBadTarget, s)
	}
	return nil
}
