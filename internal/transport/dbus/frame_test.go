package dbus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"

	godbus "github.com/godbus/dbus/v5"
)

// frameCases are messages as a bus delivers them: the ones parseFrame
// reads (calls, replies and signals with one byte array, or none) and
// ones it leaves to godbus.
func frameCases(t testing.TB) [][]byte {
	t.Helper()
	sender := godbus.MakeVariant(":1.42")
	var out [][]byte
	for _, size := range []int{0, 1, 3, 64, 1000} {
		body := bytes.Repeat([]byte{0xa5}, size)
		m := call(DefaultName, Path, Interface, "Probe", body)
		m.Headers[godbus.FieldSender] = sender
		out = append(out, encodedLE(t, m, uint32(size+1)))
		r := &godbus.Message{Type: godbus.TypeMethodReply, Flags: godbus.FlagNoAutoStart, Headers: map[godbus.HeaderField]godbus.Variant{
			godbus.FieldReplySerial: godbus.MakeVariant(uint32(7 + size)),
			godbus.FieldDestination: godbus.MakeVariant(":1.9"),
			godbus.FieldSender:      sender,
			godbus.FieldSignature:   godbus.MakeVariant(godbus.SignatureOf(body)),
		}, Body: []any{body}}
		out = append(out, encodedLE(t, r, 3))
	}
	sig := call(DefaultName, Path, Interface, "OneWay", []byte("one way"))
	sig.Type = godbus.TypeSignal
	out = append(out, encodedLE(t, sig, 9))
	out = append(out, encodedLE(t, call("", "/", "org.freedesktop.DBus.Peer", "Ping"), 10))
	// Not read in place: a string body, two arguments, big-endian.
	out = append(out, encodedLE(t, call(DefaultName, Path, Interface, "Probe", "a string"), 11))
	out = append(out, encodedLE(t, call(DefaultName, Path, Interface, "Probe", []byte("x"), uint32(5)), 12))
	var b bytes.Buffer
	if err := call(DefaultName, Path, Interface, "Probe", []byte("big")).EncodeTo(&b, binary.BigEndian); err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(b.Bytes()[8:], 13)
	return append(out, b.Bytes())
}

func encodedLE(t testing.TB, m *godbus.Message, serial uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.EncodeTo(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b.Bytes()[8:], serial)
	return b.Bytes()
}

// agree checks that, where parseFrame reads p, it reads what godbus
// decodes; it reports whether parseFrame read it.
func agree(t *testing.T, p []byte) bool {
	t.Helper()
	f, ok := parseFrame(p)
	if !ok {
		return false
	}
	m, err := godbus.DecodeMessage(bytes.NewReader(p))
	if err != nil {
		// godbus refuses, after decoding it, a message whose names,
		// flags, type or fields a bus checks before it delivers one
		// (InvalidMessageError, SignatureError): such a message never
		// comes to parseFrame from a bus. Any other refusal says the
		// bytes are not laid out as parseFrame read them.
		var im godbus.InvalidMessageError
		var se godbus.SignatureError
		if !errors.As(err, &im) && !errors.As(err, &se) {
			t.Errorf("parseFrame read %+v from %x, which godbus refuses: %v", f, p, err)
		}
		return true
	}
	str := func(f godbus.HeaderField) string {
		v, ok := m.Headers[f]
		if !ok {
			return ""
		}
		switch x := v.Value().(type) {
		case string:
			return x
		case godbus.ObjectPath:
			return string(x)
		case godbus.Signature:
			return x.String()
		}
		return "?"
	}
	rs, _ := m.Headers[godbus.FieldReplySerial].Value().(uint32)
	var body []byte
	if len(m.Body) == 1 {
		body, _ = m.Body[0].([]byte)
	}
	if f.typ != byte(m.Type) || f.flags != byte(m.Flags) || f.serial != m.Serial() || f.replySerial != rs ||
		string(f.path) != str(godbus.FieldPath) || string(f.iface) != str(godbus.FieldInterface) ||
		string(f.member) != str(godbus.FieldMember) || string(f.sender) != str(godbus.FieldSender) ||
		string(f.sig) != str(godbus.FieldSignature) || !bytes.Equal(f.bytes, body) {
		t.Errorf("parseFrame read %+v from %x; godbus decodes %v", f, p, m)
	}
	return true
}

// TestParseFrame: parseFrame reads the messages that carry probes as
// godbus decodes them, leaves the others to it, and, on messages mutated
// at random (a bus is a peer), never reads past the message nor reads
// anything godbus decodes otherwise.
func TestParseFrame(t *testing.T) {
	cases := frameCases(t)
	for i, p := range cases {
		want := i < len(cases)-3 // the last three go to godbus
		if got := agree(t, p); got != want {
			t.Errorf("case %d (%x): read in place %v, want %v", i, p, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	read := 0
	for range 20000 {
		p := bytes.Clone(cases[rng.IntN(len(cases))])
		for range 1 + rng.IntN(3) {
			p[rng.IntN(len(p))] = byte(rng.Uint32())
		}
		if len(p) < fixedHeader {
			continue
		}
		if n, _, err := frameLen(p); err != nil || n != len(p) {
			continue // next would not hand it over as one message
		}
		if agree(t, p) {
			read++
		}
	}
	if read == 0 {
		t.Error("no mutated message was read in place: the mutations test nothing")
	}
}

// TestParseHeaderCut: a header whose last field stops right after its
// head, where the slice given ends (parseHeader needs nothing after the
// fields), is refused, not read past.
func TestParseHeaderCut(t *testing.T) {
	p := []byte{'l', byte(godbus.TypeMethodCall), 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0,
		fieldSignature, 1, 'g', 0} // the field's head, and no value
	if _, _, ok := parseHeader(p); ok {
		t.Errorf("parseHeader read %x", p)
	}
}

// FuzzParseFrame: parseFrame never panics, and agrees with godbus.
func FuzzParseFrame(f *testing.F) {
	for _, p := range frameCases(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) < fixedHeader {
			return
		}
		if n, _, err := frameLen(p); err != nil || n != len(p) {
			return
		}
		agree(t, p)
	})
}

// TestAppendFrame: what appendFrame makes, after other messages in the
// same buffer, is a message godbus decodes to the fields and the byte
// array given, and parseFrame reads alike.
func TestAppendFrame(t *testing.T) {
	for _, size := range []int{0, 1, 3, 7, 64, 1000} {
		ay := bytes.Repeat([]byte{0x5a}, size)
		for _, fields := range [][]field{
			{{fieldPath, 'o', string(Path), 0}, {fieldInterface, 's', Interface, 0}, {fieldMember, 's', "Probe", 0},
				{fieldDestination, 's', DefaultName, 0}, {fieldSignature, 'g', "ay", 0}},
			{{fieldReplySerial, 'u', "", 77}, {fieldSignature, 'g', "ay", 0}, {fieldDestination, 's', ":1.7", 0}},
			{{fieldReplySerial, 'u', "", 78}, {fieldSignature, 'g', "ay", 0}},
		} {
			typ := byte(godbus.TypeMethodCall)
			if fields[0].code == fieldReplySerial {
				typ = byte(godbus.TypeMethodReply)
			}
			before := appendFrame(nil, typ, 0, fields, []byte("first")) // a message ahead in the buffer
			before = append(before, make([]byte, align(len(before), 8)-len(before))...)
			buf := appendFrame(before, typ, 0, fields, ay)
			p := buf[len(before):]
			binary.LittleEndian.PutUint32(p[8:], 5)
			if n, _, err := frameLen(p); err != nil || n != len(p) {
				t.Fatalf("size %d, %d fields: frameLen %d, %v; made %d bytes", size, len(fields), n, err, len(p))
			}
			m, err := godbus.DecodeMessage(bytes.NewReader(p))
			if err != nil {
				t.Fatalf("size %d, %d fields: godbus refuses %x: %v", size, len(fields), p, err)
			}
			if len(m.Body) != 1 || !bytes.Equal(m.Body[0].([]byte), ay) || byte(m.Type) != typ || m.Serial() != 5 {
				t.Errorf("size %d: godbus decodes %v", size, m)
			}
			for _, f := range fields {
				v, ok := m.Headers[godbus.HeaderField(f.code)]
				if !ok {
					t.Errorf("size %d: field %d missing from %v", size, f.code, m)
					continue
				}
				want := any(f.s)
				switch f.typ {
				case 'o':
					want = godbus.ObjectPath(f.s)
				case 'g':
					want = godbus.ParseSignatureMust(f.s)
				case 'u':
					want = f.u
				}
				if v.Value() != want {
					t.Errorf("size %d: field %d = %v, want %v", size, f.code, v.Value(), want)
				}
			}
			if !agree(t, p) {
				t.Errorf("size %d: parseFrame does not read what appendFrame made", size)
			}
		}
	}
}

// TestSendErrBusGone: a send that fails because the bus went away (its
// socket closed under the write: EPIPE or ECONNRESET, or EOF) ends the run
// as a bus gone, as a read's EOF does; a stalled bus says so.
func TestSendErrBusGone(t *testing.T) {
	c := &Conn{peer: Addr{Bus: "unix:path=/x"}, closed: make(chan struct{})}
	for _, err := range []error{
		os.NewSyscallError("write", syscall.EPIPE),
		os.NewSyscallError("write", syscall.ECONNRESET),
		io.EOF,
	} {
		if got := c.sendErr(err); !errors.Is(got, errBusGone) || !errors.Is(got, io.EOF) {
			t.Errorf("sendErr(%v) = %v, want the bus gone (EOF)", err, got)
		}
	}
	if got := c.sendErr(os.ErrDeadlineExceeded); errors.Is(got, errBusGone) || !errors.Is(got, os.ErrDeadlineExceeded) {
		t.Errorf("sendErr(deadline) = %v, want the bus stalled", got)
	}
}
