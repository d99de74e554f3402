// Opening a reflector's sockets, and claiming the path of a Unix socket.

package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport/dbus"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/udp"
	"github.com/volley-net/volley/internal/transport/unixgram"
)

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
// "unix", with default limits and the kernel's delayed ACKs.
func ListenStream(network, addr string) (PacketConn, error) {
	return ListenStreamWith(network, addr, ListenOptions{Socket: sockopt.Options{TOS: -1}})
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
		after = o.tcpAccepted
	}
	l, err := stream.ListenWith(context.Background(), lc, network, addr, o.Limits, after)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// tcpAccepted readies a TCP connection the listener accepted as o says,
// and returns what to do after each message read from it: set
// TCP_QUICKACK when o.QuickAck says so, or nothing (nil).
func (o ListenOptions) tcpAccepted(c net.Conn) func(msg []byte) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	if o.Socket.NoDelayOff {
		_ = tc.SetNoDelay(false)
	}
	if o.QuickAck == nil {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	quickAck, wants := sockopt.QuickAcker(rc), o.QuickAck
	return func(msg []byte) {
		if wants(msg) { // the client may ask for delayed ACKs
			_ = quickAck()
		}
	}
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

// ListenOptions are how a reflector's stream sockets are made.
type ListenOptions struct {
	Socket sockopt.Options // applied to the listening socket; connections inherit them
	// QuickAck, when set, is asked of every message a TCP connection
	// reads; when it says yes, TCP_QUICKACK is set, so that the kernel
	// acknowledges the request at once (iperf 2's bounceback does). It
	// decides by the message (reflector.WantsQuickAck reads its type,
	// flags and hold), as transport does not read messages. nil: the
	// kernel's delayed ACKs stay on.
	QuickAck func(msg []byte) bool
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
