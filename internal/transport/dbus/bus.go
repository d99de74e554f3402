package dbus

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/volley-net/volley/internal/kwait"
)

// busConn is a connection to a bus that volley reads and writes itself:
// godbus encodes and decodes each message (its Message type, the
// library's low-level API), and the goroutine that wants a message reads
// it from the socket. godbus's own connection reads every message on a
// goroutine of its own and hands it over through a channel, and answers a
// call on a goroutine made for it: two or three goroutine wake-ups a
// message, which on a machine where the bus daemon and the peer want the
// same CPUs cost more than the bus itself (measured: a Go reflector on
// godbus's connection answered 3.1k calls/s where C libdbus's answered
// 4.9k, from the same client through the same daemon; on this one, 7.0k).
//
// Reads may come from one goroutine at a time; writes from any.
type busConn struct {
	uc   *net.UnixConn
	name string // the unique name the bus gave

	// What was read and not yet decoded is in[head:]; skip is how much
	// of a message too large to take is still to be thrown away.
	in   []byte
	head int
	skip int

	wmu    sync.Mutex
	serial uint32       // the last serial sent
	out    bytes.Buffer // what godbus encodes
	raw    []byte       // what appendFrame makes
	wdl    time.Time    // the write deadline set last
	broken error        // a write that failed: the stream may hold part of a message

	// block has the socket's reads and writes wait in the kernel, on
	// the reader's locked thread, once setBlocking turned it on.
	block kwait.Slot
}

const (
	// fixedHeader is the part of a message's header of fixed size:
	// byte order, type, flags, version, body length, serial, and the
	// length of the header fields' array.
	fixedHeader = 16
	// maxFrame is the largest message taken: volley's largest, with
	// room for the header fields. A larger one is thrown away as it
	// comes.
	maxFrame = MaxMessage + 64<<10
	// inBuffer is the read buffer's size to begin with; it grows as a
	// large message's bytes come, up to maxFrame.
	inBuffer = 64 << 10
	// handshakeTimeout bounds the authentication and each call made
	// while connecting.
	handshakeTimeout = 5 * time.Second
	// writeTimeout bounds each write to the bus: a bus that reads
	// nothing for that long has stalled.
	writeTimeout = 2 * time.Second
)

// errNotUnix says an address names a transport volley does not speak.
var errNotUnix = errors.New("volley connects only to D-Bus unix: addresses (path= or abstract=)")

// dialBus connects to the bus at addr (as Address resolves it), says who
// the user is (SASL EXTERNAL: the bus checks it against the socket's
// credentials) and hello.
func dialBus(addr string) (*busConn, error) {
	addrs := strings.Split(addr, ";")
	var errs []error
	for _, a := range addrs {
		b, err := dialOne(a)
		if err == nil {
			return b, nil
		}
		if len(addrs) > 1 {
			err = fmt.Errorf("%s: %w", a, err)
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, fmt.Errorf("D-Bus at %s: %w", addr, errs[0])
	}
	// One line, each address's error kept for errors.Is.
	format := "D-Bus at %s: none answered: " + strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ")
	return nil, fmt.Errorf(format, append([]any{addr}, anys(errs)...)...)
}

func anys(errs []error) []any {
	a := make([]any, len(errs))
	for i, e := range errs {
		a[i] = e
	}
	return a
}

// socketPath returns the socket a unix: address names.
func socketPath(addr string) (string, error) {
	kind, keys, ok := strings.Cut(addr, ":")
	if !ok || kind != "unix" {
		return "", errNotUnix
	}
	for kv := range strings.SplitSeq(keys, ",") {
		k, v, _ := strings.Cut(kv, "=")
		v, err := unescape(v)
		if err != nil {
			return "", err
		}
		switch k {
		case "path":
			return v, nil
		case "abstract":
			return "@" + v, nil
		}
	}
	return "", errNotUnix
}

// unescape undoes a D-Bus address value's %XX escapes.
func unescape(v string) (string, error) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+2 >= len(v) {
			return "", fmt.Errorf("bad escape in %q", v)
		}
		x, err := hex.DecodeString(v[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", v)
		}
		b.WriteByte(x[0])
		i += 2
	}
	return b.String(), nil
}

func dialOne(addr string) (*busConn, error) {
	path, err := socketPath(addr)
	if err != nil {
		return nil, err
	}
	uc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		if errno := syscall.Errno(0); errors.As(err, &errno) && (errno == syscall.ECONNREFUSED || errno == syscall.ENOENT) {
			err = fmt.Errorf("%w (no bus listens there)", errno)
		}
		return nil, err
	}
	b := &busConn{uc: uc, in: make([]byte, 0, inBuffer)}
	if err := b.hello(); err != nil {
		uc.Close()
		return nil, err
	}
	return b, nil
}

// hello authenticates and asks the bus for the connection's unique name.
func (b *busConn) hello() error {
	b.handshake(true)
	defer b.handshake(false)
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Getuid())))
	if _, err := b.uc.Write([]byte("\x00AUTH EXTERNAL " + uid + "\r\n")); err != nil {
		return err
	}
	line, err := b.line()
	if err != nil {
		return fmt.Errorf("authenticating: %w", err)
	}
	if !strings.HasPrefix(line, "OK ") {
		return fmt.Errorf("the bus refused EXTERNAL authentication as uid %d: %q", os.Getuid(), line)
	}
	if _, err := b.uc.Write([]byte("BEGIN\r\n")); err != nil {
		return err
	}
	reply, err := b.busCall("Hello")
	if err != nil {
		return err
	}
	name, ok := any(nil), len(reply.Body) == 1
	if ok {
		name = reply.Body[0]
	}
	if b.name, ok = name.(string); !ok || b.name == "" {
		return fmt.Errorf("the bus's Hello gave no name but %v", reply.Body)
	}
	return nil
}

// handshake bounds each read and write while connecting (on) by
// handshakeTimeout, or ends that (off): reads then wait as long as their
// caller says, and writes take the deadline write sets.
func (b *busConn) handshake(on bool) {
	if on {
		_ = b.uc.SetDeadline(time.Now().Add(handshakeTimeout))
		return
	}
	_ = b.uc.SetDeadline(time.Time{})
	b.wdl = time.Time{} // the next write sets its own
}

// line reads the bus's answer during authentication: one line, at most
// 512 bytes.
func (b *busConn) line() (string, error) {
	for {
		if i := bytes.Index(b.in, []byte("\r\n")); i >= 0 {
			l := string(b.in[:i])
			b.in = b.in[:copy(b.in, b.in[i+2:])]
			return l, nil
		}
		if len(b.in) > 512 {
			return "", errors.New("the bus's answer is not a line")
		}
		n, err := b.uc.Read(b.in[len(b.in):cap(b.in)])
		b.in = b.in[:len(b.in)+n]
		if err != nil {
			return "", err
		}
	}
}

// busCall calls the bus's own method member (org.freedesktop.DBus) with
// body and waits for the reply, passing over any other message.
func (b *busConn) busCall(member string, body ...any) (*godbus.Message, error) {
	serial, err := b.send(call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member, body...))
	if err != nil {
		return nil, err
	}
	for {
		m, err := b.read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", member, err)
		}
		if header[uint32](m, godbus.FieldReplySerial) != serial {
			continue
		}
		if m.Type == godbus.TypeError {
			return nil, callError(m)
		}
		return m, nil
	}
}

// call makes a method call.
func call(dest string, path godbus.ObjectPath, iface, member string, body ...any) *godbus.Message {
	m := &godbus.Message{Type: godbus.TypeMethodCall, Headers: map[godbus.HeaderField]godbus.Variant{
		godbus.FieldPath:      godbus.MakeVariant(path),
		godbus.FieldInterface: godbus.MakeVariant(iface),
		godbus.FieldMember:    godbus.MakeVariant(member),
	}, Body: body}
	if dest != "" {
		m.Headers[godbus.FieldDestination] = godbus.MakeVariant(dest)
	}
	if len(body) > 0 {
		m.Headers[godbus.FieldSignature] = godbus.MakeVariant(godbus.SignatureOf(body...))
	}
	return m
}

// answer makes the answer to the call serial from sender: a reply, or an
// error named errName, holding body.
func answer(sender string, serial uint32, typ godbus.Type, errName string, body ...any) *godbus.Message {
	r := &godbus.Message{Type: typ, Headers: map[godbus.HeaderField]godbus.Variant{
		godbus.FieldReplySerial: godbus.MakeVariant(serial),
	}, Body: body}
	if sender != "" {
		r.Headers[godbus.FieldDestination] = godbus.MakeVariant(sender)
	}
	if errName != "" {
		r.Headers[godbus.FieldErrorName] = godbus.MakeVariant(errName)
	}
	if len(body) > 0 {
		r.Headers[godbus.FieldSignature] = godbus.MakeVariant(godbus.SignatureOf(body...))
	}
	return r
}

// limitsExceeded is the error a call larger than volley takes gets.
const limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

var tooLargeText = fmt.Sprintf("volley takes messages of up to %d bytes", MaxMessage)

// refuse answers a call larger than maxFrame, of which p is the header
// (next throws the rest away as it comes), with limitsExceeded: its
// caller would wait for its timeout.
func (b *busConn) refuse(p []byte) {
	f, _, ok := parseHeader(p)
	if ok && f.typ == byte(godbus.TypeMethodCall) && godbus.Flags(f.flags)&godbus.FlagNoReplyExpected == 0 {
		_, _ = b.send(answer(string(f.sender), f.serial, godbus.TypeError, limitsExceeded, tooLargeText))
	}
}

// callError is the error an error message m says.
func callError(m *godbus.Message) error {
	name := header[string](m, godbus.FieldErrorName)
	return godbus.Error{Name: name, Body: m.Body}
}

// send writes m with the next serial, which it returns.
func (b *busConn) send(m *godbus.Message) (uint32, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.out.Reset()
	if err := m.EncodeTo(&b.out, binary.LittleEndian); err != nil {
		return 0, err
	}
	return b.write(b.out.Bytes())
}

// write writes the message p with the next serial, which it returns; the
// caller holds wmu.
func (b *busConn) write(p []byte) (uint32, error) {
	if b.broken != nil {
		return 0, b.broken
	}
	// The serial is the header's bytes 8-11 (godbus gives no way to set
	// it outside its own connection).
	b.serial++
	if b.serial == 0 {
		b.serial = 1
	}
	binary.LittleEndian.PutUint32(p[8:], b.serial)
	if now := time.Now(); b.wdl.Sub(now) < writeTimeout/2 {
		b.wdl = now.Add(writeTimeout)
		_ = b.uc.SetWriteDeadline(b.wdl)
		b.block.SetWriteDeadline(b.wdl)
	}
	var err error
	if c := b.block.Conn(); c != nil {
		_, err = c.Write(p)
	} else {
		_, err = b.uc.Write(p)
	}
	if err != nil {
		// Part of the message may be on its way: what followed it
		// would be garbage to the bus. The connection ends here, and
		// a read waiting on it says so.
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("the bus took nothing for %v: %w", writeTimeout, err)
		}
		b.broken = err
		b.Close()
	}
	return b.serial, err
}

// sendFrame writes the message appendFrame makes of its arguments, with
// the next serial, which it returns.
func (b *busConn) sendFrame(typ byte, fields []field, ay []byte) (uint32, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.raw = appendFrame(b.raw[:0], typ, 0, fields, ay)
	return b.write(b.raw)
}

// writeErr returns the error of the write that ended the connection, or
// nil.
func (b *busConn) writeErr() error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.broken
}

// setBlocking has reads (and writes) wait in the kernel on the reader's
// thread, out of the runtime's poller, or in the poller again (see
// package kwait). The reader locks its thread first.
func (b *busConn) setBlocking(on bool) error {
	rc, err := b.uc.SyscallConn()
	if err != nil {
		return err
	}
	return b.block.Set(rc, on)
}

// setReadDeadline sets the deadline of reads, in the poller or not.
func (b *busConn) setReadDeadline(t time.Time) error {
	b.block.SetReadDeadline(t)
	return b.uc.SetReadDeadline(t)
}

// read returns the next message from the bus that godbus decodes, as the
// read deadline allows (see next).
func (b *busConn) read() (*godbus.Message, error) {
	for {
		p, whole, err := b.next()
		if err != nil {
			return nil, err
		}
		if !whole {
			continue
		}
		if m, err := godbus.DecodeMessage(bytes.NewReader(p)); err == nil {
			return m, nil
		}
		// Not a message godbus takes: passed over.
	}
}

// next returns the next message from the bus, undecoded (valid until the
// next read), as the read deadline allows; a message cut by the deadline
// stays for the next read. Of a message larger than maxFrame, it returns
// the header alone (not whole), where it fits the buffer, and throws the
// rest away as it comes.
func (b *busConn) next() (p []byte, whole bool, err error) {
	for {
		p := b.in[b.head:]
		if b.skip > 0 && len(p) > 0 {
			n := min(b.skip, len(p))
			b.skip -= n
			b.head += n
			continue
		}
		if len(p) >= fixedHeader {
			n, head, err := frameLen(p)
			if err != nil {
				return nil, false, fmt.Errorf("the bus sent %w", err)
			}
			switch {
			case n > maxFrame && head <= len(p):
				b.skip = n // from the next read on
				return p[:head], false, nil
			case n > maxFrame && head > maxFrame:
				b.skip = n
				continue
			case n <= len(p):
				b.head += n
				return p[:n], true, nil
			}
		}
		if err := b.fill(); err != nil {
			return nil, false, err
		}
	}
}

// fill reads what the socket has into in. A full buffer first has what
// was read moved to its front, and where that frees nothing, doubles (up
// to maxFrame): it grows with the bytes that came, never with the length
// a message declares.
func (b *busConn) fill() error {
	if b.head == len(b.in) {
		b.in, b.head = b.in[:0], 0
	}
	if len(b.in) == cap(b.in) {
		if b.head > 0 {
			b.in, b.head = b.in[:copy(b.in, b.in[b.head:])], 0
		} else {
			b.in = append(b.in, make([]byte, min(cap(b.in), maxFrame-cap(b.in)))...)[:len(b.in)]
		}
	}
	var n int
	var err error
	if c := b.block.Conn(); c != nil {
		into := b.in[len(b.in):cap(b.in)]
		if b.head < len(b.in) || b.skip > 0 {
			n, err = c.ReadRest(into) // a message begun (see kwait.Conn.ReadRest)
		} else {
			n, err = c.Read(into)
		}
		if n == 0 && err == nil {
			err = io.EOF
		}
	} else {
		n, err = b.uc.Read(b.in[len(b.in):cap(b.in)])
	}
	b.in = b.in[:len(b.in)+n]
	if n > 0 {
		return nil
	}
	return err
}

// Close closes the connection; a read waiting on it returns.
func (b *busConn) Close() error {
	b.block.Closing()
	return b.uc.Close()
}
