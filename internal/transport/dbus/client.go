package dbus

import (
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

	"github.com/volley-net/volley/internal/deadline"
)

// Conn is a client's connection to one reflector through a bus: each
// client has a connection of its own to the bus. Write sends a message as
// the method call (or signal) its type calls for, without waiting; Read
// returns the replies as they come.
type Conn struct {
	bus   *godbus.Conn
	obj   godbus.BusObject
	dest  string
	local Addr
	peer  Addr

	done     chan *godbus.Call
	deadline *deadline.Deadline
	closed   chan struct{}
	once     sync.Once
}

// Dial connects to bus and addresses the reflector called name on it
// (DefaultName when empty).
func Dial(bus, name string) (*Conn, error) {
	if name == "" {
		name = DefaultName
	}
	c, _, err := connect(bus)
	if err != nil {
		return nil, err
	}
	return &Conn{
		bus:      c,
		obj:      c.Object(name, Path),
		dest:     name,
		local:    Addr{Bus: bus, Name: c.Names()[0]},
		peer:     Addr{Bus: bus, Name: name},
		done:     make(chan *godbus.Call, 1<<16),
		deadline: deadline.New(),
		closed:   make(chan struct{}),
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
	msg := append([]byte(nil), b...) // the bus may encode it after Write returns
	method := "Probe"
	if len(b) >= headerBytes {
		switch b[3] {
		case typeHello:
			method = "Open"
		case typeClose:
			method = "Close"
		case typeProbe:
			if binary.BigEndian.Uint16(b[4:])&flagOneWay != 0 {
				return c.signal(msg)
			}
		}
	}
	call := c.obj.Go(Interface+"."+method, 0, c.done, msg)
	if call.Err != nil {
		return 0, c.sendErr(call.Err)
	}
	return len(b), nil
}

// signal sends a OneWay signal with msg to the reflector alone.
func (c *Conn) signal(msg []byte) (int, error) {
	m := &godbus.Message{Type: godbus.TypeSignal, Headers: map[godbus.HeaderField]godbus.Variant{
		godbus.FieldPath:        godbus.MakeVariant(Path),
		godbus.FieldInterface:   godbus.MakeVariant(Interface),
		godbus.FieldMember:      godbus.MakeVariant("OneWay"),
		godbus.FieldDestination: godbus.MakeVariant(c.dest),
		godbus.FieldSignature:   godbus.MakeVariant(godbus.SignatureOf(msg)),
	}, Body: []any{msg}}
	if call := c.bus.Send(m, nil); call.Err != nil {
		return 0, c.sendErr(call.Err)
	}
	return len(msg), nil
}

// errNoReflector and errBusGone wrap what the client's run knows as a
// refused port and a vanished peer.
var (
	errNoReflector = fmt.Errorf("no reflector has the name on the bus: %w", syscall.ECONNREFUSED)
	errBusGone     = errors.New("the bus closed the connection")
)

// sendErr says what a failed send means: the bus gone when the
// connection is closed or its socket failed; the bus's answer, when it
// came before the call returned (the name has no owner, say), as Read
// would have said it; else what the library said (a message it could not
// encode, say).
func (c *Conn) sendErr(err error) error {
	var ne *net.OpError
	var de godbus.Error
	if errors.Is(err, godbus.ErrClosed) || errors.Is(err, io.EOF) || errors.As(err, &ne) || errors.As(err, &de) {
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
	// Anything else ends the connection (the bus library closes it on
	// any read error): the bus went away, or closed on us.
	if errors.Is(err, godbus.ErrClosed) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w: %w", c.peer.Bus, errBusGone, io.EOF)
	}
	return fmt.Errorf("%s: %w (%v): %w", c.peer.Bus, errBusGone, err, io.EOF)
}

// Read returns the next reply. A call answered with nothing (the
// reflector dropped the message) is skipped.
func (c *Conn) Read(b []byte) (int, error) {
	for {
		call, o := deadline.Wait(c.deadline, c.done, c.closed)
		switch o {
		case deadline.Expired:
			return 0, os.ErrDeadlineExceeded
		case deadline.Closed:
			return 0, net.ErrClosed
		}
		if call.Err != nil {
			return 0, c.wrap(call.Err)
		}
		if len(call.Body) != 1 {
			continue
		}
		if reply, ok := call.Body[0].([]byte); ok && len(reply) > 0 {
			return copy(b, reply), nil
		}
	}
}

// SetReadDeadline sets the deadline for Read.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.deadline.Set(t)
	return nil
}

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
