package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// serverSetup is what openServer opens: the server's sockets, its bus and
// its log file.
type serverSetup struct {
	listen   string                  // --listen: UDP's address, and TCP's
	workers  int                     // UDP sockets sharing the port
	udp      sockopt.Options         // UDP's socket options
	tcp      bool                    // also a TCP listener on UDP's port
	stream   transport.ListenOptions // TCP's; its Limits are Unix's too
	unixPath string                  // --unix, or ""
	gramPath string                  // --unixgram, or ""
	dbusBus  string                  // --dbus, or ""
	dbusName string
	logPath  string // --log FILE, or "" ("-", stdout, needs no opening)
}

// serverSockets is what openServer opened.
type serverSockets struct {
	udp                       []transport.PacketConn // one per worker
	tcp, unix, unixgram, dbus transport.PacketConn   // nil: not asked for
	log                       *probelog.Writer       // on logFile; nil without --log FILE
	logFile                   *os.File
}

// openServer opens every socket, the bus and the log file s asks for, or,
// when one fails, closes what it opened and returns the error, which
// names the flag or the protocol and port. Nothing is printed: the caller
// says "listening on" once it all is open.
func openServer(ctx context.Context, s serverSetup) (_ *serverSockets, err error) {
	ss := &serverSockets{}
	defer func() {
		if err != nil {
			ss.close()
		}
	}()
	openUDP := func(addr string) ([]transport.PacketConn, error) {
		return transport.ListenUDPWith(ctx, addr, s.workers, s.udp)
	}
	var openTCP func(addr string) (transport.PacketConn, error)
	if s.tcp {
		openTCP = func(addr string) (transport.PacketConn, error) {
			return transport.ListenStreamWith("tcp", addr, s.stream)
		}
	}
	if ss.udp, ss.tcp, err = bindPort(s.listen, openUDP, openTCP); err != nil {
		return nil, err // a port in use is an error, not a usage error
	}
	if s.unixPath != "" {
		if ss.unix, err = transport.ListenStreamWith("unix", s.unixPath, transport.ListenOptions{Limits: s.stream.Limits}); err != nil {
			return nil, fmt.Errorf("--unix %w", err)
		}
	}
	if s.gramPath != "" {
		if ss.unixgram, err = transport.ListenUnixgram(s.gramPath); err != nil {
			return nil, fmt.Errorf("--unixgram %w", err)
		}
	}
	if s.dbusBus != "" {
		if ss.dbus, err = transport.ListenDBus(s.dbusBus, s.dbusName); err != nil {
			return nil, fmt.Errorf("--dbus %s: %w", s.dbusBus, err)
		}
	}
	// The log file last: a set-up that fails leaves an earlier log alone.
	if s.logPath != "" && s.logPath != "-" {
		if ss.logFile, err = os.Create(s.logPath); err != nil {
			dir := filepath.Dir(s.logPath)
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				return nil, usagef("--log %s: the directory %s does not exist", s.logPath, dir)
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // it names the path again
			}
			return nil, usagef("--log %s: %w", s.logPath, err)
		}
		if ss.log, err = probelog.NewWriter(ss.logFile, reflector.LogHeader); err != nil {
			return nil, fmt.Errorf("--log %s: %w", s.logPath, err)
		}
	}
	return ss, nil
}

// close closes what openServer opened, in the reverse order.
func (ss *serverSockets) close() {
	if ss.logFile != nil {
		ss.logFile.Close()
	}
	for _, pc := range []transport.PacketConn{ss.dbus, ss.unixgram, ss.unix, ss.tcp} {
		if pc != nil {
			pc.Close()
		}
	}
	for _, pc := range ss.udp {
		pc.Close()
	}
}

// checkListen checks --listen's form before anything is opened: HOST:PORT
// or :PORT, the port a number from 0 to 65535 (or a service name). A
// host that does not resolve, or is not this host's, is found by bind.
func checkListen(addr string) error {
	const want = "want HOST:PORT or :PORT, the port 0 to 65535 (0 picks a free one)"
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %s: %s", addr, want)
	}
	if _, err := net.LookupPort("udp", port); err != nil || port == "" {
		return usagef("--listen %s: bad port %q; %s", addr, port, want)
	}
	return nil
}

// portTries bounds the ports bindPort tries when the kernel picks them.
const portTries = 64

// bindPort opens the UDP sockets on addr with openUDP and, unless openTCP
// is nil, a TCP listener on the same address and port with openTCP. With
// port 0 the kernel picks a port free for UDP, which TCP may have in use:
// then both are closed and another port is tried, up to portTries times.
// With a port given, the port in use by either protocol is the error,
// naming the protocol and the port.
func bindPort(addr string, openUDP func(addr string) ([]transport.PacketConn, error), openTCP func(addr string) (transport.PacketConn, error)) ([]transport.PacketConn, transport.PacketConn, error) {
	_, port, _ := net.SplitHostPort(addr)
	anyPort := port == "0" || port == ""
	for try := 1; ; try++ {
		pcs, err := openUDP(addr)
		if err != nil {
			return nil, nil, err // "listen udp ADDR: bind: address already in use"
		}
		if openTCP == nil {
			return pcs, nil, nil
		}
		tl, err := openTCP(pcs[0].LocalAddr().String())
		if err == nil {
			return pcs, tl, nil
		}
		for _, pc := range pcs {
			pc.Close()
		}
		inUse := errors.Is(err, syscall.EADDRINUSE)
		if anyPort && inUse && try < portTries {
			continue // TCP has the port UDP got: another
		}
		if anyPort && inUse {
			return nil, nil, fmt.Errorf("%w: no port was free for both UDP and TCP in %d tries (--tcp=false serves UDP alone)", err, portTries)
		}
		return nil, nil, fmt.Errorf("%w (--tcp=false serves UDP alone)", err)
	}
}
