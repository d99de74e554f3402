package server

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

// Setup is what Open opens: the server's sockets, its bus and its log
// file. The errors Open returns name the flags that ask for them.
type Setup struct {
	Listen   string                  // --listen: UDP's address, and TCP's
	Workers  int                     // UDP sockets sharing the port
	UDP      sockopt.Options         // UDP's socket options
	TCP      bool                    // also a TCP listener on UDP's port
	Stream   transport.ListenOptions // TCP's; its Limits are Unix's too
	UnixPath string                  // --unix, or ""
	GramPath string                  // --unixgram, or ""
	DBusBus  string                  // --dbus, or ""
	DBusName string
	LogPath  string // --log FILE, or "" ("-", stdout, needs no opening)
}

// Listeners is what Open opened. Serve reflects on each of them.
type Listeners struct {
	UDP                       []transport.PacketConn // one per worker
	TCP, Unix, Unixgram, DBus transport.PacketConn   // nil: not asked for
	Log                       *probelog.Writer       // on the log file; nil without --log FILE
	logFile                   *os.File
	spinners                  int  // threads SetBusyPoll made spin
	stamped                   bool // the UDP sockets stamp (EnableStamps)
}

// Open opens every socket, the bus and the log file s asks for, or, when
// one fails, closes what it opened and returns the error, which names the
// flag or the protocol and port; an error in what s asks (a log file in a
// directory that is not there) is an ErrConfig. Nothing is printed: the
// caller says "listening on" once it all is open.
func Open(ctx context.Context, s Setup) (_ *Listeners, err error) {
	ss := &Listeners{}
	defer func() {
		if err != nil {
			ss.Close()
		}
	}()
	openUDP := func(addr string) ([]transport.PacketConn, error) {
		return transport.ListenUDPWith(ctx, addr, s.Workers, s.UDP)
	}
	var openTCP func(addr string) (transport.PacketConn, error)
	if s.TCP {
		openTCP = func(addr string) (transport.PacketConn, error) {
			return transport.ListenStreamWith("tcp", addr, s.Stream)
		}
	}
	if ss.UDP, ss.TCP, err = bindPort(s.Listen, openUDP, openTCP); err != nil {
		return nil, err // a port in use is an error, not a usage error
	}
	if s.UnixPath != "" {
		if ss.Unix, err = transport.ListenStreamWith("unix", s.UnixPath, transport.ListenOptions{Limits: s.Stream.Limits}); err != nil {
			return nil, fmt.Errorf("--unix %w", err)
		}
	}
	if s.GramPath != "" {
		if ss.Unixgram, err = transport.ListenUnixgram(s.GramPath); err != nil {
			return nil, fmt.Errorf("--unixgram %w", err)
		}
	}
	if s.DBusBus != "" {
		if ss.DBus, err = transport.ListenDBus(s.DBusBus, s.DBusName); err != nil {
			return nil, fmt.Errorf("--dbus %s: %w", s.DBusBus, err)
		}
	}
	// The log file last: a set-up that fails leaves an earlier log alone.
	if s.LogPath != "" && s.LogPath != "-" {
		if ss.logFile, err = os.Create(s.LogPath); err != nil {
			dir := filepath.Dir(s.LogPath)
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				return nil, configErrorf("--log %s: the directory %s does not exist", s.LogPath, dir)
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // it names the path again
			}
			return nil, configErrorf("--log %s: %w", s.LogPath, err)
		}
		if ss.Log, err = probelog.NewWriter(ss.logFile, reflector.LogHeader); err != nil {
			return nil, fmt.Errorf("--log %s: %w", s.LogPath, err)
		}
	}
	return ss, nil
}

// Close closes what Open opened, in the reverse order.
func (ss *Listeners) Close() {
	if ss.logFile != nil {
		ss.logFile.Close()
	}
	for _, pc := range []transport.PacketConn{ss.DBus, ss.Unixgram, ss.Unix, ss.TCP} {
		if pc != nil {
			pc.Close()
		}
	}
	for _, pc := range ss.UDP {
		pc.Close()
	}
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
