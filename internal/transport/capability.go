// What a connection or listener can do beyond Conn and PacketConn. Callers
// find an optional capability by asserting one of these named interfaces,
// and nowhere else: the assertions below check at compile time which
// transport has which. The functions after them use a capability where
// the connection has it and do without it where not (Batches, Granted,
// MaxMessage, SetBusyPoll), so that callers need no assertion at all.

package transport

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport/dbus"
	"github.com/volley-net/volley/internal/transport/stream"
	"github.com/volley-net/volley/internal/transport/udp"
	"github.com/volley-net/volley/internal/transport/unixgram"
	"github.com/volley-net/volley/internal/tstamp"
)

// TCPConn is a Conn over TCP, which can say how long it took to connect
// and what the kernel knows of it.
type TCPConn interface {
	Conn
	ConnectTime() time.Duration
	TCPInfo() (TCPInfo, error)
}

// BatchPacketConn is a PacketConn that reads and writes several datagrams
// per system call (recvmmsg and sendmmsg on Linux). ReadBatch waits for at
// least one datagram and returns those ready, up to len(ms); WriteBatch
// sends ms in order and returns how many went before the first error.
type BatchPacketConn interface {
	PacketConn
	ReadBatch(ms []Message) (int, error)
	WriteBatch(ms []Message) (int, error)
}

// BatchConn is a Conn that reads and writes several messages per system
// call; Message.Addr is not used.
type BatchConn interface {
	Conn
	ReadBatch(ms []Message) (int, error)
	WriteBatch(ms []Message) (int, error)
}

// Stamper is a socket that can take kernel (or NIC) stamps of what it
// sends and receives: see udp.PacketConn.EnableTimestamps.
type Stamper interface {
	EnableTimestamps(hw bool) error
	NextTxID() uint32
	ReadTxStamps(st []tstamp.TxStamp) (int, error)
}

// SchedSampler is a client's UDP socket that can ask for the scheduler's
// transmit stamp on one datagram in a number only: see
// udp.Conn.SampleSched.
type SchedSampler interface {
	SampleSched(every uint32) error
	SchedEvery() uint32
}

// A client's UDP socket is one: were its method to drift from the
// interface, the client would ask for every probe's scheduler stamp
// again, and nothing else would say so.
var _ SchedSampler = (*udp.Conn)(nil)

// ReadClocker is a socket whose batch reads can say when each message
// came, by the reader's clock, as the system call returns
// (Message.At): see udp.PacketConn.SetReadClock.
type ReadClocker interface {
	SetReadClock(now func() int64)
}

var (
	_ ReadClocker = (*udp.Conn)(nil)
	_ ReadClocker = (*udp.PacketConn)(nil)
)

// ReadTimer is a connection whose single reads (Read) say when the
// message they return came, by the clock SetReadClock gave, as the system
// call that brought it returned: see stream.Conn.SetReadClock.
type ReadTimer interface {
	ReadClocker
	ReadAt() int64
}

var (
	_ ReadTimer = (*udp.Conn)(nil)
	_ ReadTimer = (*stream.Conn)(nil)
	_ ReadTimer = (*unixgram.Conn)(nil)

	// The reflector gives its clock to every ReadClocker it serves.
	_ ReadClocker = (*stream.Listener)(nil)
)

// PathReader is a UDP socket that can read what each received datagram's
// IP header said (TTL or hop limit, traffic class) into Message.Path: see
// udp.PacketConn.EnablePath.
type PathReader interface {
	EnablePath() error
}

// WriteDeadliner is a connection or listener whose writes take a
// deadline: every socket. A D-Bus connection has none: its library writes
// for it.
type WriteDeadliner interface {
	SetWriteDeadline(t time.Time) error
}

// StreamServer is a listener whose peers' messages are answered on each
// connection's own goroutine by a Handler, instead of being read with
// ReadFrom: TCP and Unix streams.
type StreamServer interface {
	SetHandler(Handler)
}

// CallServer is a listener whose messages are calls, each answered on its
// caller's goroutine by a FuncHandler: D-Bus.
type CallServer interface {
	SetHandler(FuncHandler)
}

// BusyPoller is a socket whose reads can spin instead of sleeping in the
// kernel.
type BusyPoller interface {
	SetBusyPoll(on bool) error
}

// BlockingReader is a socket whose reads can wait inside the kernel, on
// the reader's own thread, instead of in the runtime's poller (see
// udp.PacketConn.SetBlockingReads).
type BlockingReader interface {
	SetBlockingReads(on bool) error
}

// BusyPolled is a socket that says whether its reads spin, for a caller
// that must then keep its own clock (a spinning reader leaves no CPU for a
// timer goroutine).
type BusyPolled interface {
	BusyPolling() bool
}

// MaxMessager is a connection that carries messages larger than a UDP
// datagram.
type MaxMessager interface {
	MaxMessage() int
}

// SyscallConn is a connection with a socket behind it, which the kernel
// can be asked about (see Granted): UDP, TCP and Unix stream connections.
type SyscallConn interface {
	Conn
	syscall.Conn
}

// Failer is a listener that can stop answering on its own (a bus that went
// away); Err says why, or is nil.
type Failer interface {
	Err() error
}

var (
	_ Stamper         = (*udp.Conn)(nil)
	_ Stamper         = (*udp.PacketConn)(nil)
	_ Conn            = (*net.UDPConn)(nil)
	_ Conn            = (*stream.Conn)(nil)
	_ PacketConn      = (*stream.Listener)(nil)
	_ PacketConn      = (*unixListener)(nil)
	_ PacketConn      = (*unixgram.PacketConn)(nil)
	_ BatchConn       = (*udp.Conn)(nil)
	_ PacketConn      = (*udp.PacketConn)(nil)
	_ BatchPacketConn = (*udp.PacketConn)(nil)
	_ StreamServer    = (*stream.Listener)(nil)
	_ CallServer      = (*dbus.Listener)(nil)
	_ WriteDeadliner  = (*udp.Conn)(nil)
	_ WriteDeadliner  = (*udp.PacketConn)(nil)
	_ WriteDeadliner  = (*stream.Conn)(nil)
	_ PathReader      = (*udp.Conn)(nil)
	_ PathReader      = (*udp.PacketConn)(nil)
	_ BusyPoller      = (*udp.Conn)(nil)
	_ BusyPoller      = (*udp.PacketConn)(nil)
	_ BusyPoller      = (*stream.Conn)(nil)
	_ BusyPoller      = (*stream.Listener)(nil)
	_ BlockingReader  = (*udp.Conn)(nil)
	_ BlockingReader  = (*udp.PacketConn)(nil)
	_ BlockingReader  = (*stream.Conn)(nil)
	_ BlockingReader  = (*unixgram.Conn)(nil)
	_ BlockingReader  = (*unixgram.PacketConn)(nil)
	_ BusyPolled      = (*udp.PacketConn)(nil)
	_ BusyPolled      = (*udp.Conn)(nil)
	_ MaxMessager     = (*dbus.Conn)(nil)
	_ MaxMessager     = (*dbus.Listener)(nil)
	_ MaxMessager     = (*unixgram.PacketConn)(nil)
	_ MaxMessager     = (*stream.Conn)(nil)
	_ MaxMessager     = (*stream.Listener)(nil)
	_ Failer          = (*dbus.Listener)(nil)
	_ SyscallConn     = (*udp.Conn)(nil)
	_ SyscallConn     = (*stream.Conn)(nil)
)

// Batches returns c as a BatchPacketConn and the most datagrams one of its
// batches moves: c itself and MaxBatch when it batches, else an adapter
// that moves one message per system call.
func Batches(c PacketConn) (BatchPacketConn, int) {
	if bc, ok := c.(BatchPacketConn); ok {
		return bc, MaxBatch
	}
	return oneAtATime{c}, 1
}

// oneAtATime serves a PacketConn without batches as batches of one.
type oneAtATime struct{ PacketConn }

func (c oneAtATime) ReadBatch(ms []Message) (int, error) {
	n, addr, err := c.ReadFrom(ms[0].Buf)
	if err != nil {
		return 0, err
	}
	ms[0].N, ms[0].Addr = n, addr
	return 1, nil
}

func (c oneAtATime) WriteBatch(ms []Message) (int, error) {
	for i, m := range ms {
		if _, err := c.WriteTo(m.Buf[:m.N], m.Addr); err != nil {
			return i, err
		}
	}
	return len(ms), nil
}

// ReadDeadliner is anything whose reads take a deadline: every Conn and
// PacketConn.
type ReadDeadliner interface {
	SetReadDeadline(t time.Time) error
}

// InterruptReads makes c's reads return at once with a timeout once ctx is
// done, the one that waits then and every later one, by moving c's read
// deadline into the past; a read out of the poller (busy or blocking)
// takes what is queued first. stop undoes it if ctx is not done yet, as
// context.AfterFunc's stop does.
func InterruptReads(ctx context.Context, c ReadDeadliner) (stop func() bool) {
	return context.AfterFunc(ctx, func() { _ = Interrupt(c) })
}

// Interrupt makes c's waiting and later reads return at once with a
// timeout (out of the poller, once nothing is queued).
func Interrupt(c ReadDeadliner) error { return c.SetReadDeadline(time.Unix(1, 0)) }

// Granted returns the socket options the kernel applied to conn's socket,
// for udp and tcp connections; errors.ErrUnsupported for the others.
func Granted(conn Conn) (sockopt.Granted, error) {
	sc, ok := conn.(SyscallConn)
	if !ok {
		return sockopt.Granted{}, errors.ErrUnsupported
	}
	la := conn.LocalAddr()
	if la == nil || la.Network() != "udp" && la.Network() != "tcp" {
		return sockopt.Granted{}, errors.ErrUnsupported // Unix sockets, D-Bus
	}
	network := la.Network()
	rc, err := sc.SyscallConn()
	if err != nil {
		return sockopt.Granted{}, err
	}
	if a, ok := la.(interface{ AddrPort() netip.AddrPort }); ok && !a.AddrPort().Addr().Unmap().Is4() {
		network += "6"
	}
	return sockopt.Read(rc, network)
}

// MaxMessage returns the largest message conn carries: 65,000 bytes on
// UDP, more on streams.
func MaxMessage(conn any) int {
	if m, ok := conn.(MaxMessager); ok {
		return m.MaxMessage()
	}
	return udp.MaxMessage
}

// ErrNoBusyPoll: the connection cannot busy-poll.
var ErrNoBusyPoll = errors.New("busy polling is for UDP, TCP and Unix stream sockets on Linux")

// WaitInKernel makes c's reads wait inside the kernel on the calling
// goroutine's thread, which it locks (see BlockingReader), where c can
// and does not busy-poll, and says whether it did (on); undo turns that
// off and unlocks the thread. For a reader that has a thread to itself:
// a run's receive loop, a reflector's read loop.
func WaitInKernel(c any) (undo func(), on bool) {
	if bp, ok := c.(BusyPolled); ok && bp.BusyPolling() {
		return func() {}, false
	}
	br, ok := c.(BlockingReader)
	if !ok {
		return func() {}, false
	}
	runtime.LockOSThread()
	if br.SetBlockingReads(true) != nil {
		runtime.UnlockOSThread()
		return func() {}, false
	}
	return func() {
		_ = br.SetBlockingReads(false)
		runtime.UnlockOSThread()
	}, true
}

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

// SetWriteDeadline sets c's write deadline where its writes take one, and
// does nothing where they do not (D-Bus): for an adapter over c that
// passes its caller's deadline on.
func SetWriteDeadline(c any, t time.Time) error {
	if wd, ok := c.(WriteDeadliner); ok {
		return wd.SetWriteDeadline(t)
	}
	return nil
}
