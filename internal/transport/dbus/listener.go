package dbus

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	godbus "github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"

	"github.com/volley-net/volley/internal/deadline"
	"github.com/volley-net/volley/internal/kwait"
)

// Handler answers a message from a peer: it returns the reply, or nil. It
// may build the reply in msg's memory, up to its capacity. (The same type
// as the stream transport's, so that a reflector serves both alike.)
type Handler = func(msg []byte, from netip.AddrPort) []byte

// Listener is a reflector's presence on a bus. One goroutine reads every
// message the bus delivers, in the order it delivers them, and answers it
// through the Handler set with SetHandler: the calls of one client are
// answered in the order they were made (a goroutine per call, as the bus
// library's exported objects have, would reorder them), and no message
// changes goroutine on its way (see busConn). ReadFrom only waits for its
// deadline, and WriteTo sends the replies a reflector held back (--hold)
// as the answers to their calls.
type Listener struct {
	bus     *busConn
	local   Addr
	handler atomic.Pointer[Handler]
	xml     map[godbus.ObjectPath]string // the introspection data, by path
	machine string                       // the host's machine ID, or ""
	noID    string                       // why there is none

	mu      sync.Mutex
	peers   map[string]netip.AddrPort // unique name: stand-in address
	waiting map[heldKey]heldCall      // calls whose reply is held

	deadline *deadline.Deadline
	closed   chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	gone     atomic.Bool // the bus closed the connection
	cause    error       // the write that stalled and ended it (nil: the bus closed it), written before gone
}

type heldKey struct {
	peer netip.AddrPort
	seq  uint64
}

// heldCall is a call to answer once the reflector sends its held reply.
type heldCall struct {
	sender string
	serial uint32
	since  time.Time
}

// maxPeers bounds the stand-in addresses kept; past it they are reused.
const maxPeers = 1 << 14

// sweepEvery is how often the held calls are looked at.
const sweepEvery = time.Second

// Listen connects to bus, claims name (DefaultName when empty) and
// answers as the reflector's object. A name another connection holds is
// an error.
func Listen(bus, name string) (*Listener, error) {
	if name == "" {
		name = DefaultName
	}
	addr, err := Address(bus)
	if err != nil {
		return nil, err
	}
	c, err := dialBus(addr)
	if err != nil {
		return nil, err
	}
	l := &Listener{bus: c, local: Addr{Bus: bus, Name: name}, peers: map[string]netip.AddrPort{},
		waiting: map[heldKey]heldCall{}, deadline: deadline.New(), closed: make(chan struct{})}
	l.xml = introspectXML()
	if l.machine, err = machineID(); err != nil {
		l.noID = err.Error()
	}
	if err := l.claim(name); err != nil {
		c.Close()
		return nil, fmt.Errorf("D-Bus at %s: %w", addr, err)
	}
	l.wg.Go(l.serve)
	return l, nil
}

// claim asks the bus for the OneWay signals sent to the reflector and for
// the name.
func (l *Listener) claim(name string) error {
	l.bus.handshake(true)
	defer l.bus.handshake(false)
	match := "type='signal',interface='" + Interface + "',member='OneWay'"
	if _, err := l.bus.busCall("AddMatch", match); err != nil {
		return err
	}
	reply, err := l.bus.busCall("RequestName", name, uint32(godbus.NameFlagDoNotQueue))
	if err != nil {
		return fmt.Errorf("claiming %s: %w", name, err)
	}
	if len(reply.Body) != 1 || reply.Body[0] != any(uint32(godbus.RequestNameReplyPrimaryOwner)) {
		return fmt.Errorf("%s is taken by another connection (a reflector runs there already?)", name)
	}
	return nil
}

// introspectXML returns the introspection data of each object path the
// reflector answers Introspect at: Path, and each of its parents down from
// "/" (whose data name the next one down as a child node), so that a tool
// that walks the tree from "/" (busctl tree, gdbus introspect --recurse)
// finds the reflector.
func introspectXML() map[godbus.ObjectPath]string {
	ay := func(dir string) introspect.Arg { return introspect.Arg{Name: "message", Type: "ay", Direction: dir} }
	method := func(name string) introspect.Method {
		return introspect.Method{Name: name, Args: []introspect.Arg{ay("in"), ay("out")}}
	}
	// NewIntrospectable adds org.freedesktop.DBus.Introspectable and
	// org.freedesktop.DBus.Peer to every node, which the listener answers
	// at every path it knows (Peer at any path). They are not listed here:
	// godbus v5.2.4 stops looking at the first of the two that it finds
	// and adds the other again, so a node that lists one of them describes
	// it twice.
	data := map[godbus.ObjectPath]string{
		Path: string(introspect.NewIntrospectable(&introspect.Node{Interfaces: []introspect.Interface{{
			Name:    Interface,
			Methods: []introspect.Method{method("Probe"), method("Open"), method("Close")},
			Signals: []introspect.Signal{{Name: "OneWay", Args: []introspect.Arg{{Name: "message", Type: "ay"}}}},
		}}})),
	}
	for child := Path; child != "/"; {
		i := strings.LastIndexByte(string(child), '/')
		parent := godbus.ObjectPath(child[:max(i, 1)])
		data[parent] = string(introspect.NewIntrospectable(&introspect.Node{
			Children: []introspect.Node{{Name: string(child[i+1:])}},
		}))
		child = parent
	}
	return data
}

// machineIDFiles are where org.freedesktop.DBus.Peer.GetMachineId finds
// the host's machine ID, in the order libdbus reads them.
var machineIDFiles = []string{"/var/lib/dbus/machine-id", "/etc/machine-id"}

// machineID returns the host's D-Bus machine ID: 32 hexadecimal digits.
func machineID() (string, error) {
	for _, f := range machineIDFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if id := strings.TrimSpace(string(b)); len(id) == 32 {
			if _, err := hex.DecodeString(id); err == nil {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("no machine ID (32 hexadecimal digits) in %s", strings.Join(machineIDFiles, " or "))
}

// serve answers the messages the bus delivers, in order, and every
// sweepEvery the held calls whose reply never came.
func (l *Listener) serve() {
	// The reads wait in the kernel on this thread, where they can.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var yield kwait.Yield
	_ = l.bus.setBlocking(true)
	next := time.Now().Add(sweepEvery)
	_ = l.bus.setReadDeadline(next)
	for {
		p, whole, err := l.bus.next()
		switch {
		case err == nil && whole:
			l.take(p)
		case err == nil:
			l.bus.refuse(p)
		}
		now := time.Now()
		yield.Maybe(now.UnixNano()) // after an answer; a message that comes meanwhile waits (one in 5 ms at most)
		if now.After(next) {
			l.sweep()
			next = now.Add(sweepEvery)
			_ = l.bus.setReadDeadline(next)
		}
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		select {
		case <-l.closed:
		default:
			// The bus went away, sent what is not D-Bus, or took
			// nothing for writeTimeout: ReadFrom says so, and the
			// reflector stops serving it.
			if werr := l.bus.writeErr(); errors.Is(werr, os.ErrDeadlineExceeded) {
				l.cause = werr // a stall: a closed bus needs no more words
			}
			l.gone.Store(true)
			l.once.Do(func() { close(l.closed) })
		}
		return
	}
}

func header[T any](m *godbus.Message, f godbus.HeaderField) T {
	var zero T
	v, ok := m.Headers[f]
	if !ok {
		return zero
	}
	t, _ := v.Value().(T)
	return t
}

// take answers the message p: a probe or a one-way probe as read in
// place (parseFrame), anything else as godbus decodes it.
func (l *Listener) take(p []byte) {
	f, ok := parseFrame(p)
	switch {
	case !ok || len(f.bytes) == 0 || string(f.iface) != Interface:
	case f.typ == byte(godbus.TypeMethodCall) && string(f.member) == "Probe" && string(f.path) == string(Path):
		l.probe(godbus.Flags(f.flags), f.serial, string(f.sender), f.bytes)
		return
	case f.typ == byte(godbus.TypeSignal) && string(f.member) == "OneWay":
		l.answer(string(f.sender), f.bytes, 0)
		return
	}
	if m, err := godbus.DecodeMessage(bytes.NewReader(p)); err == nil {
		l.dispatch(m)
	}
}

// probe answers the call Probe(msg) from sender.
func (l *Listener) probe(flags godbus.Flags, serial uint32, sender string, msg []byte) {
	if len(msg) > MaxMessage {
		l.replyTo(flags, serial, sender, godbus.TypeError, limitsExceeded, tooLargeText)
		return
	}
	if out := l.answer(sender, msg, serial); out != nil {
		if len(out) == 0 && !isVolley(msg) {
			out = msg // not a volley message: Probe returns its argument
		}
		if flags&godbus.FlagNoReplyExpected == 0 {
			l.replyBytes(serial, sender, out)
		}
	}
}

// replyBytes answers the call serial from sender with the byte array b.
func (l *Listener) replyBytes(serial uint32, sender string, b []byte) {
	fields := [...]field{
		{code: fieldReplySerial, typ: 'u', u: serial},
		{code: fieldSignature, typ: 'g', s: "ay"},
		{code: fieldDestination, typ: 's', s: sender},
	}
	n := len(fields)
	if sender == "" {
		n--
	}
	_, _ = l.bus.sendFrame(byte(godbus.TypeMethodReply), fields[:n], b) // a bus that takes nothing ends the serve loop's reads
}

// dispatch answers one message.
func (l *Listener) dispatch(m *godbus.Message) {
	iface := header[string](m, godbus.FieldInterface)
	member := header[string](m, godbus.FieldMember)
	sender := header[string](m, godbus.FieldSender)
	switch m.Type {
	case godbus.TypeSignal:
		if iface == Interface && member == "OneWay" && len(m.Body) == 1 {
			if msg, ok := m.Body[0].([]byte); ok {
				l.answer(sender, msg, 0)
			}
		}
		return
	case godbus.TypeMethodCall:
	default:
		return // replies to no call of ours, errors
	}
	path := header[godbus.ObjectPath](m, godbus.FieldPath)
	switch {
	case (iface == "org.freedesktop.DBus.Peer" || iface == "") && member == "Ping":
		// Peer is answered at any path, as the D-Bus specification has it.
		l.reply(m, sender, godbus.TypeMethodReply, "")
		return
	case (iface == "org.freedesktop.DBus.Peer" || iface == "") && member == "GetMachineId":
		if l.machine == "" {
			l.reply(m, sender, godbus.TypeError, "org.freedesktop.DBus.Error.Failed", l.noID)
			return
		}
		l.reply(m, sender, godbus.TypeMethodReply, "", l.machine)
		return
	case (iface == "org.freedesktop.DBus.Introspectable" || iface == "") && member == "Introspect":
		if xml, ok := l.xml[path]; ok {
			l.reply(m, sender, godbus.TypeMethodReply, "", xml)
			return
		}
	}
	if path != Path {
		l.reply(m, sender, godbus.TypeError, "org.freedesktop.DBus.Error.UnknownObject", "no such object")
		return
	}
	if iface == Interface && (member == "Probe" || member == "Open" || member == "Close") {
		msg, ok := []byte(nil), len(m.Body) == 1
		if ok {
			msg, ok = m.Body[0].([]byte)
		}
		switch {
		case !ok:
			l.reply(m, sender, godbus.TypeError, "org.freedesktop.DBus.Error.InvalidArgs", "want one array of bytes (ay)")
		case len(msg) > MaxMessage:
			l.reply(m, sender, godbus.TypeError, limitsExceeded, tooLargeText)
		case member == "Probe":
			l.probe(m.Flags, m.Serial(), sender, msg)
		default:
			if out := l.answer(sender, msg, m.Serial()); out != nil {
				l.reply(m, sender, godbus.TypeMethodReply, "", out)
			}
		}
		return
	}
	l.reply(m, sender, godbus.TypeError, "org.freedesktop.DBus.Error.UnknownMethod", "no method "+iface+"."+member)
}

// reply answers the call m from sender with a reply, or an error named
// errName, holding body.
func (l *Listener) reply(m *godbus.Message, sender string, typ godbus.Type, errName string, body ...any) {
	l.replyTo(m.Flags, m.Serial(), sender, typ, errName, body...)
}

// replyTo answers the call serial, with flags, as reply does.
func (l *Listener) replyTo(flags godbus.Flags, serial uint32, sender string, typ godbus.Type, errName string, body ...any) {
	if flags&godbus.FlagNoReplyExpected != 0 {
		return
	}
	_, _ = l.bus.send(answer(sender, serial, typ, errName, body...)) // a bus that takes nothing ends the serve loop's reads
}

// isVolley reports whether msg starts with volley's magic.
func isVolley(msg []byte) bool {
	return len(msg) >= headerBytes && binary.BigEndian.Uint16(msg) == 0x564C
}

// answer runs the handler on msg from sender and returns the reply: an
// empty one when it drops msg, and nil when it holds the reply (--hold)
// for WriteTo to send as the answer to call (its serial; 0 for a signal,
// which has no answer).
func (l *Listener) answer(sender string, msg []byte, call uint32) []byte {
	h := l.handler.Load()
	if h == nil || len(msg) > MaxMessage {
		return []byte{} // not serving yet, or not a message volley sends
	}
	from := l.addrOf(sender)
	// Room for the reply, which the handler builds in the message's
	// memory: the size a probe asks for, and a close's results.
	room := len(msg)
	isProbe := isVolley(msg) && msg[3] == typeProbe
	switch {
	case isProbe:
		room = max(room, int(binary.BigEndian.Uint32(msg[56:]))+64) // and room for a tag
	case isVolley(msg) && msg[3] == typeClose:
		room = max(room, 64<<10)
	}
	buf := make([]byte, len(msg), min(room, MaxMessage+1))
	copy(buf, msg)
	if isProbe && call != 0 && binary.BigEndian.Uint32(msg[60:]) > 0 {
		// A hold: remember the call, for WriteTo.
		l.mu.Lock()
		l.waiting[heldKey{from, binary.BigEndian.Uint64(msg[16:])}] = heldCall{sender: sender, serial: call, since: time.Now()}
		l.mu.Unlock()
	}
	if out := (*h)(buf, from); out != nil {
		return out
	}
	if isProbe && call != 0 && binary.BigEndian.Uint32(msg[60:]) > 0 {
		return nil // held: WriteTo answers, or the sweep does
	}
	return []byte{}
}

// heldTimeout is how long a held call waits for its reply before the
// sweep answers it with nothing (the reflector dropped its probe): longer
// than any hold a reflector grants by default, and than any client's
// timeout, so its client has long counted it lost.
const heldTimeout = time.Minute

// sweep answers, with nothing, the held calls whose reply never came
// (outside the lock: WriteTo takes it).
func (l *Listener) sweep() {
	var stale []heldCall
	l.mu.Lock()
	for k, c := range l.waiting {
		if time.Since(c.since) > heldTimeout {
			delete(l.waiting, k)
			stale = append(stale, c)
		}
	}
	l.mu.Unlock()
	for _, c := range stale {
		l.replyBytes(c.serial, c.sender, nil)
	}
}

// addrOf returns the stand-in address of a peer's unique name: an address
// in fd76:6c02::/32, made up, that the reflector keys sessions by.
func (l *Listener) addrOf(sender string) netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.peers[sender]; ok {
		return a
	}
	if len(l.peers) >= maxPeers {
		clear(l.peers)
	}
	n := uint64(len(l.peers)) + 1
	var b [16]byte
	b[0], b[1], b[2], b[3] = 0xfd, 0x76, 0x6c, 0x02
	binary.BigEndian.PutUint64(b[8:], n)
	a := netip.AddrPortFrom(netip.AddrFrom16(b), 1)
	l.peers[sender] = a
	return a
}

// SetHandler makes the listener answer messages with h.
func (l *Listener) SetHandler(h Handler) { l.handler.Store(&h) }

// ReadFrom waits for the read deadline (the handler answers every
// message) and returns os.ErrDeadlineExceeded, or net.ErrClosed once
// closed.
func (l *Listener) ReadFrom(b []byte) (int, netip.AddrPort, error) {
	if _, o := deadline.Wait[struct{}](l.deadline, nil, l.closed); o == deadline.Closed {
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
}

var errNoCall = errors.New("dbus: no call waits for that reply")

// WriteTo answers, with b, the call of addr's probe that b replies to: a
// reply the reflector held.
func (l *Listener) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	if len(b) < headerBytes {
		return 0, errNoCall
	}
	key := heldKey{addr, binary.BigEndian.Uint64(b[16:])}
	l.mu.Lock()
	c, ok := l.waiting[key]
	delete(l.waiting, key)
	l.mu.Unlock()
	if !ok {
		return 0, errNoCall
	}
	l.replyBytes(c.serial, c.sender, b)
	return len(b), nil
}

// ErrBusGone says the bus closed the listener's connection.
var ErrBusGone = errors.New("the bus closed the connection")

// Err returns ErrBusGone, with the bus's address (and the write that
// stalled, where one ended the connection), once the bus has gone away,
// and nil before.
func (l *Listener) Err() error {
	switch {
	case l.gone.Load() && l.cause != nil:
		return fmt.Errorf("D-Bus %s: %w (%v)", l.local.Bus, ErrBusGone, l.cause)
	case l.gone.Load():
		return fmt.Errorf("D-Bus %s: %w", l.local.Bus, ErrBusGone)
	}
	return nil
}

// SetReadDeadline sets the deadline for ReadFrom.
func (l *Listener) SetReadDeadline(t time.Time) error {
	l.deadline.Set(t)
	return nil
}

// LocalAddr returns the bus and the name claimed.
func (l *Listener) LocalAddr() net.Addr { return l.local }

// MaxMessage returns the largest message the listener carries.
func (l *Listener) MaxMessage() int { return MaxMessage }

// Close gives the name up and leaves the bus.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	err := l.bus.Close()
	l.wg.Wait()
	return err
}
