package dbus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// Conn is a client's connection to one reflector through a bus: each
// client has a connection of its own to the bus. Write sends a message as
// the method call (or signal) its type calls for, without waiting; Read
// reads the replies as they come, on the reading goroutine (no goroutine
// of the bus library's in between; see busConn).
type Conn struct {
	bus   *busConn
	dest  string
	local Addr
	peer  Addr

	closed chan struct{}
	once   sync.Once
}

// Dial connects to bus and addresses the reflector called name on it
// (DefaultName when empty).
func Dial(bus, name string) (*Conn, error) {
	if name == "" {
		name = DefaultName
	}
	addr, err := Address(bus)
	if err != nil {
		return nil, err
	}
	b, err := dialBus(addr)
	if err != nil {
		return nil, err
	}
	return &Conn{
		bus:    b,
		dest:   name,
		local:  Addr{Bus: bus, Name: b.name},
		peer:   Addr{Bus: bus, Name: name},
		closed: make(chan struct{}),
	}, nil
}

// volley's message types as the header's byte 3 gives them (see package
// wire); the flag bit of a one-way probe is in its bytes 4-5.
const (
	typeHello   = 1
	typeProbe   = 3
	typeClose   = 5
	flagOneWay  = 1 << 1
	headerBytes = 64
)

// Write sends b: a Hello as Open, a Close as Close, a one-way probe as a
// OneWay signal to the reflector, anything else as Probe. It does not
// wait for the reply.
func (c *Conn) Write(b []byte) (int, error) {
	method := "Probe"
	if len(b) >= headerBytes {
		switch b[3] {
		case typeHello:
			method = "Open"
		case typeClose:
			method = "Close"
		case typeProbe:
			if binary.BigEndian.Uint16(b[4:])&flagOneWay != 0 {
				return c.signal(b)
			}
		}
	}
	return c.send(byte(godbus.TypeMethodCall), method, b)
}

// signal sends a OneWay signal with msg to the reflector alone.
func (c *Conn) signal(msg []byte) (int, error) {
	return c.send(byte(godbus.TypeSignal), "OneWay", msg)
}

// send sends msg to the reflector's member as a message of type typ.
func (c *Conn) send(typ byte, member string, msg []byte) (int, error) {
	fields := [...]field{
		{code: fieldPath, typ: 'o', s: string(Path)},
		{code: fieldInterface, typ: 's', s: Interface},
		{code: fieldMember, typ: 's', s: member},
		{code: fieldDestination, typ: 's', s: c.dest},
		{code: fieldSignature, typ: 'g', s: "ay"},
	}
	if _, err := c.bus.sendFrame(typ, fields[:], msg); err != nil {
		return 0, c.sendErr(err)
	}
	return len(msg), nil
}

// errNoReflector and errBusGone wrap what the client's run knows as a
// refused port and a vanished peer.
var (
	errNoReflector = fmt.Errorf("no reflector has the name on the bus: %w", syscall.ECONNREFUSED)
	errBusGone     = errors.New("the bus closed the connection")
)

// sendErr says what a failed send means: closed, when the client closed
// the connection; a stalled bus, past the write timeout; else the bus
// gone, or a message the library could not encode.
func (c *Conn) sendErr(err error) error {
	var ne *net.OpError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: the bus took nothing for %v: %w", c.peer.Bus, writeTimeout, err)
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		// A bus that went away while a probe was being sent fails the
		// write (EPIPE, an os.SyscallError): the same end as a read's
		// EOF (CI once saw "write: broken pipe" instead).
		return c.wrap(err)
	}
	return err
}

// wrap says what a call that failed on its way means for the run.
func (c *Conn) wrap(err error) error {
	var de godbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
			return fmt.Errorf("%s on %s: %w", c.dest, c.peer.Bus, errNoReflector)
		}
		return fmt.Errorf("%s on %s: %s: %v", c.dest, c.peer.Bus, de.Name, de.Body)
	}
	select {
	case <-c.closed:
		return net.ErrClosed
	default:
	}
	// Anything else ends the connection: the bus went away, or closed
	// on us.
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w: %w", c.peer.Bus, errBusGone, io.EOF)
	}
	return fmt.Errorf("%s: %w (%v): %w", c.peer.Bus, errBusGone, err, io.EOF)
}

// Read returns the next reply. A call answered with nothing (the
// reflector dropped the message) is passed over, and so is anything that
// is not a reply (the bus's signals).
func (c *Conn) Read(b []byte) (int, error) {
	for {
		p, whole, err := c.bus.next()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, c.wrap(err)
		case !whole:
			c.bus.refuse(p) // larger than any reply to a probe
			continue
		}
		if f, ok := parseFrame(p); ok && f.typ == byte(godbus.TypeMethodReply) {
			if len(f.bytes) > 0 {
				return copy(b, f.bytes), nil
			}
			continue
		}
		m, err := godbus.DecodeMessage(bytes.NewReader(p))
		if err != nil {
			continue
		}
		switch m.Type {
		case godbus.TypeMethodCall:
			c.answer(m)
		case godbus.TypeError:
			return 0, c.wrap(callError(m))
		case godbus.TypeMethodReply:
			if len(m.Body) != 1 {
				continue
			}
			if reply, ok := m.Body[0].([]byte); ok && len(reply) > 0 {
				return copy(b, reply), nil
			}
		}
	}
}

// answer answers a call made to the client, as a bus connection must
// (the caller would wait for its own timeout): org.freedesktop.DBus.Peer's
// Ping, and an error for anything else. A write that fails ends the
// connection, which the next read says.
func (c *Conn) answer(m *godbus.Message) {
	if m.Flags&godbus.FlagNoReplyExpected != 0 {
		return
	}
	sender := header[string](m, godbus.FieldSender)
	iface, member := header[string](m, godbus.FieldInterface), header[string](m, godbus.FieldMember)
	r := answer(sender, m.Serial(), godbus.TypeError, "org.freedesktop.DBus.Error.UnknownMethod", "a volley client answers only org.freedesktop.DBus.Peer.Ping")
	if (iface == "org.freedesktop.DBus.Peer" || iface == "") && member == "Ping" {
		r = answer(sender, m.Serial(), godbus.TypeMethodReply, "")
	}
	_, _ = c.bus.send(r)
}

// SetReadDeadline sets the deadline for Read.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.bus.setReadDeadline(t) }

// SetBlockingReads makes reads wait for replies inside the kernel, on the
// reader's thread, as a blocking recv does in C, instead of in the
// runtime's poller (see package kwait): for a reader that has its thread
// to itself (runtime.LockOSThread). A wait for a message's start holds
// its deadline to the timer's precision on a Unix bus socket (it waits in
// ppoll); other waits, to the kernel's tick.
func (c *Conn) SetBlockingReads(on bool) error { return c.bus.setBlocking(on) }

// LocalAddr returns the client's unique name on the bus.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the reflector's name on the bus.
func (c *Conn) RemoteAddr() net.Addr { return c.peer }

// MaxMessage returns the largest message the connection carries.
func (c *Conn) MaxMessage() int { return MaxMessage }

// Close closes the connection to the bus.
func (c *Conn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.bus.Close()
}
