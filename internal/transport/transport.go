// Package transport defines the sockets volley's client and reflector
// measure through, and opens them by target: "host[:port]" or a URL such as
// "udp://host:port". The implementations live in packages below this one;
// faster engines (busy polling, batched I/O, kernel timestamps) replace them
// behind these interfaces without touching statistics or reports.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport/dbus"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/udp"
	"github.com/volley-net/volley/internal/transport/unixgram"
	"github.com/volley-net/volley/internal/wire"
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

// Message is one datagram of a batch.
type Message = udp.Message

// TCPInfo is what the kernel says of a TCP connection.
type TCPInfo = stream.TCPInfo

// Handler answers a stream connection's messages on the connection's own
// goroutine; see stream.Listener.SetHandler.
type Handler = stream.Handler

// FuncHandler answers a D-Bus listener's messages, each on the goroutine
// of its caller; see dbus.Listener.SetHandler.
type FuncHandler = dbus.Handler

// Admission says how far a stream listener's Handler lets a peer in; see
// stream.Admission.
type Admission = stream.Admission

// The steps of a stream peer's admission.
const (
	AdmitNone    = stream.AdmitNone
	AdmitLarge   = stream.AdmitLarge
	AdmitSession = stream.AdmitSession
)

// StreamLimits bound what a stream listener's peers may take; see
// stream.Limits.
type StreamLimits = stream.Limits

// Refusal says why a stream listener refuses a peer; see stream.Refusal.
type Refusal = stream.Refusal

// The reasons a stream listener refuses a peer.
const (
	RefusedConns       = stream.RefusedConns
	RefusedSourceConns = stream.RefusedSourceConns
	RefusedMemory      = stream.RefusedMemory
)

// ErrNoMemory: a stream listener's memory budget cannot hold a reply.
var ErrNoMemory = stream.ErrNoMemory

// IsSlowReader reports whether err says a reply was dropped because its
// peer does not read (a stream's queue, or a Unix datagram socket, full).
func IsSlowReader(err error) bool {
	return errors.Is(err, stream.ErrSlowReader) || errors.Is(err, unixgram.ErrSlowReader)
}

// StreamMaxMessage is the largest message over TCP and Unix streams.
const StreamMaxMessage = stream.MaxMessage

// MaxBatch is the most datagrams a batch moves.
const MaxBatch = udp.MaxBatch

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

// DialWith opens a connection to t as o says.
func DialWith(ctx context.Context, t Target, o DialOptions) (Conn, error) {
	ip := t.Scheme == "udp" || t.Scheme == "tcp"
	if !ip && (o.Family != "" || o.Bind != "" || o.Socket != (sockopt.Options{TOS: -1})) {
		return nil, fmt.Errorf("%w: -4, -6, --bind and the IP and TCP socket options are for udp:// and tcp:// targets", ErrBadTarget)
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	network := t.Scheme + o.Family
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
		if t.Scheme == "udp" {
			la, err = net.ResolveUDPAddr(network, local)
		} else {
			la, err = net.ResolveTCPAddr(network, local)
		}
		if err != nil {
			return nil, fmt.Errorf("--bind %s: %w", o.Bind, err)
		}
		d.LocalAddr = la
	}
	switch t.Scheme {
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
		if tc, ok := c.Conn.(*net.TCPConn); ok && o.Socket.NoDelayOff {
			// Go turns Nagle off as it connects; turn it back on.
			if err := tc.SetNoDelay(false); err != nil {
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

// Granted returns the socket options the kernel applied to conn's socket,
// for udp and tcp connections.
func Granted(conn Conn) (result.Socket, error) {
	var sc interface {
		SyscallConn() (syscall.RawConn, error)
	}
	network := ""
	switch c := conn.(type) {
	case *udp.Conn:
		sc, network = c.UDPConn, "udp"
	case *stream.Conn:
		tc, ok := c.Conn.(*net.TCPConn)
		if !ok {
			return result.Socket{}, errors.ErrUnsupported
		}
		sc, network = tc, "tcp"
	default:
		return result.Socket{}, errors.ErrUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return result.Socket{}, err
	}
	if a, ok := conn.LocalAddr().(interface{ AddrPort() netip.AddrPort }); ok && !a.AddrPort().Addr().Unmap().Is4() {
		network += "6"
	}
	return sockopt.Read(rc, network)
}

// ListenUnixgram opens a reflector's Unix datagram socket at path,
// claimed as claimSocketPath says; Close removes the file if it is still
// the one made here.
func ListenUnixgram(path string) (PacketConn, error) {
	if err := claimSocketPath("unixgram", path); err != nil {
		return nil, err
	}
	c, err := unixgram.Listen(path)
	if err != nil {
		return nil, bindError(path, err)
	}
	return c, nil
}

// MaxMessage returns the largest message conn carries: 65,000 bytes on
// UDP, more on streams.
func MaxMessage(conn any) int {
	if m, ok := conn.(MaxMessager); ok {
		return m.MaxMessage()
	}
	return udp.MaxMessage
}

// ListenDBus joins a bus ("session", "system" or a D-Bus address) as a
// reflector under name (dbus.DefaultName when empty); see package dbus.
func ListenDBus(bus, name string) (PacketConn, error) {
	l, err := dbus.Listen(bus, name)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenStream opens a reflector's stream socket, network "tcp" or
// "unix", with default limits.
func ListenStream(network, addr string) (PacketConn, error) {
	return ListenStreamWith(network, addr, ListenOptions{Socket: sockopt.Options{TOS: -1}, QuickAck: true})
}

// ListenOptions are how a reflector's stream sockets are made.
type ListenOptions struct {
	Socket sockopt.Options // applied to the listening socket; connections inherit them
	// QuickAck sets TCP_QUICKACK after every message read, so that the
	// kernel acknowledges requests at once (iperf 2's bounceback does).
	QuickAck bool
	// Limits bound what the peers may take.
	Limits StreamLimits
}

// claimSocketPath readies path for a Unix socket of network ("unix" or
// "unixgram"). A socket file that refuses connections (ECONNREFUSED:
// nothing is bound to it, as a crashed run leaves it) is removed. Anything
// else is left alone and is an error that names the path and what is
// there: a file that is not a socket, a live socket of either type (a
// socket of the other type answers EPROTOTYPE), one whose backlog is full,
// a missing directory.
func claimSocketPath(network, path string) error {
	if strings.HasPrefix(path, "@") {
		return nil // abstract: no file
	}
	if most := len(syscall.RawSockaddrUnix{}.Path); len(path) > most {
		return fmt.Errorf("%s: %d bytes, longer than the %d a Unix socket's path may have", path, len(path), most)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: the directory %s does not exist", path, dir)
		}
		return nil // free
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, pathErr(err))
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s: the path exists and is not a socket (%s)", path, fileKind(fi.Mode()))
	}
	c, err := net.DialTimeout(network, path, time.Second)
	var ne net.Error
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%s: a live process listens there (%s)", path, socketKinds[network])
	case errors.Is(err, syscall.EPROTOTYPE):
		return fmt.Errorf("%s: a live process listens there (%s)", path, otherSocketKind(network, path))
	case network == "unix" && (errors.Is(err, syscall.EAGAIN) || errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("%s: a live process listens there (%s with a full backlog)", path, socketKinds[network])
	case !errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s: a socket that cannot be connected to, left alone: %w", path, pathErr(err))
	}
	// Nothing is bound to it. Remove it, unless another process has
	// replaced it meanwhile.
	if now, err := os.Lstat(path); err != nil || !os.SameFile(fi, now) {
		return fmt.Errorf("%s: another process replaced the socket file while it was checked", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: remove the stale socket file: %w", path, pathErr(err))
	}
	return nil
}

// socketKinds names the Unix socket of each network.
var socketKinds = map[string]string{
	"unix":       "a Unix stream socket",
	"unixgram":   "a Unix datagram socket",
	"unixpacket": "a Unix seqpacket socket",
}

// otherSocketKind names the live socket at path that is not of network's
// type, by connecting to it as each other type.
func otherSocketKind(network, path string) string {
	for _, n := range []string{"unix", "unixgram", "unixpacket"} {
		if n == network {
			continue
		}
		c, err := net.DialTimeout(n, path, time.Second)
		if err == nil {
			c.Close()
			return socketKinds[n]
		}
		if n == "unix" && errors.Is(err, syscall.EAGAIN) {
			return socketKinds[n] + " with a full backlog"
		}
	}
	if network == "unix" {
		return "a Unix socket that is not a stream one"
	}
	return "a Unix socket that is not a datagram one"
}

// fileKind names the type of a file that is not a socket.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a file of type " + m.Type().String()
}

// pathErr strips what names the path again (the operation and the path
// of an fs.PathError or a net.OpError) from err, for messages that name
// the path themselves.
func pathErr(err error) error {
	var pe *fs.PathError
	var oe *net.OpError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &oe):
		return oe.Err
	}
	return err
}

// bindError is a failure to make a Unix socket at path: "PATH: bind: ...".
func bindError(path string, err error) error {
	return fmt.Errorf("%s: %w", path, pathErr(err))
}

// listenUnix listens on a Unix stream socket at path, claimed as
// claimSocketPath says. Close removes the socket file if it is still the
// one made here (same device and inode), before it stops listening: while
// it listens, nothing that checks first replaces the file.
func listenUnix(path string, lim StreamLimits) (PacketConn, error) {
	if err := claimSocketPath("unix", path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, bindError(path, err)
	}
	ln.SetUnlinkOnClose(false) // unixListener.Close removes it, if still its own
	l := &unixListener{Listener: stream.Serve(ln, lim), path: path}
	if fi, err := os.Lstat(path); err == nil && !strings.HasPrefix(path, "@") {
		l.file = fi
	}
	return l, nil
}

// unixListener is a stream.Listener on a Unix socket file it removes.
type unixListener struct {
	*stream.Listener
	path string
	file os.FileInfo // the socket file made; nil: none (abstract)
}

// Close removes the socket file, unless another has taken its place, and
// closes the listener.
func (l *unixListener) Close() error {
	if l.file != nil {
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.file) {
			_ = os.Remove(l.path)
		}
	}
	return l.Listener.Close()
}

// ListenStreamWith is ListenStream as o says; a Unix socket's path is
// claimed as claimSocketPath says.
func ListenStreamWith(network, addr string, o ListenOptions) (PacketConn, error) {
	if network == "unix" {
		return listenUnix(addr, o.Limits)
	}
	lc := &net.ListenConfig{}
	var after func(net.Conn) func(msg []byte)
	if network == "tcp" {
		lc.Control = o.Socket.Control
		after = func(c net.Conn) func(msg []byte) {
			tc, ok := c.(*net.TCPConn)
			if !ok {
				return nil
			}
			if o.Socket.NoDelayOff {
				_ = tc.SetNoDelay(false)
			}
			if !o.QuickAck {
				return nil
			}
			rc, err := tc.SyscallConn()
			if err != nil {
				return nil
			}
			quickAck := sockopt.QuickAcker(rc)
			return func(msg []byte) {
				if wire.FlagsOf(msg)&wire.FlagNoQuickAck == 0 { // the client may ask for delayed ACKs
					_ = quickAck()
				}
			}
		}
	}
	l, err := stream.ListenWith(context.Background(), lc, network, addr, o.Limits, after)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// ListenUDP opens the reflector's UDP socket on addr.
func ListenUDP(addr string) (PacketConn, error) {
	c, err := udp.Listen(addr)
	if err != nil {
		return nil, err // it names the network and address already
	}
	return c, nil
}

// ListenUDPWith opens n reflector sockets sharing addr's port (with
// SO_REUSEPORT when n > 1), with the socket options in o.
func ListenUDPWith(ctx context.Context, addr string, n int, o sockopt.Options) ([]PacketConn, error) {
	cs, err := udp.ListenSharedWith(ctx, addr, n, o.Control, o.Buffer == 0)
	if err != nil {
		return nil, err
	}
	out := make([]PacketConn, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out, nil
}

// ErrNoBusyPoll: the connection cannot busy-poll.
var ErrNoBusyPoll = errors.New("busy polling is for UDP, TCP and Unix stream sockets on Linux")

// SetBusyPoll makes c's reads spin instead of sleeping in the kernel; c is
// a Conn or a PacketConn.
func SetBusyPoll(c any) error {
	if b, ok := c.(BusyPoller); ok {
		if err := b.SetBusyPoll(true); err == nil {
			return nil
		}
	}
	return ErrNoBusyPoll
}

// IsRefused reports whether err says the peer is gone: its port closed (an
// ICMP port unreachable on a connected UDP socket), or a stream connection
// ended or reset.
func IsRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}
