package dbus

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
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
		return true // godbus refuses it; its fields are not looked at before a decode
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
		if n, err := frameLen(p); err != nil || n != len(p) {
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

// FuzzParseFrame: parseFrame never panics, and agrees with godbus.
func FuzzParseFrame(f *testing.F) {
	for _, p := range frameCases(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) < fixedHeader {
			return
		}
		if n, err := frameLen(p); err != nil || n != len(p) {
			return
		}
		agree(t, p)
	})
}
