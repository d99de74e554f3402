// Package testrelay is a UDP relay for tests: it stands between one volley
// client and a reflector on loopback and drops, duplicates and delays
// probes and replies on a schedule the test gives, so that the loss,
// duplication and delay the client reports can be checked exactly.
package testrelay

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

// Action is what the relay does with one message.
type Action struct {
	Drop      bool
	Duplicate bool          // send it twice
	Delay     time.Duration // hold it this long first
	// Behind holds it until the next message the same way (of any type,
	// not delayed) has been sent, and sends it right after: a reordering
	// that does not depend on timing. A message held when the relay
	// closes is dropped; one marked Behind while another is held is sent
	// at once, before the held one. Delay does not apply.
	Behind bool
}

// Rule decides the fate of a probe (on the way up) or a reply (on the way
// down) from its header. Other messages pass untouched.
type Rule func(h wire.Header) Action

// Relay forwards between a client and a reflector.
type Relay struct {
	front  *net.UDPConn // where the client sends
	back   *net.UDPConn // connected to the reflector
	client atomic.Pointer[netip.AddrPort]
	up     Rule
	down   Rule
	wg     sync.WaitGroup
	timers sync.WaitGroup
}

// held is a message held Behind, of one direction (its goroutine's own).
type held struct {
	msg    []byte
	copies int
}

// Start relays from a new socket on 127.0.0.1 to the reflector at server.
// A nil rule passes everything.
func Start(server string, up, down Rule) (*Relay, error) {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	back, err := net.Dial("udp", server)
	if err != nil {
		front.Close()
		return nil, err
	}
	r := &Relay{front: front, back: back.(*net.UDPConn), up: up, down: down}
	r.wg.Go(r.upstream)
	r.wg.Go(r.downstream)
	return r, nil
}

// Addr is where the client should send.
func (r *Relay) Addr() string { return r.front.LocalAddr().String() }

// Close stops the relay and waits for its goroutines and held messages.
func (r *Relay) Close() error {
	err := errors.Join(r.front.Close(), r.back.Close())
	r.wg.Wait()
	r.timers.Wait()
	return err
}

func (r *Relay) upstream() {
	buf := make([]byte, 65536)
	var h held
	for {
		n, from, err := r.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		r.client.Store(&from)
		r.forward(buf[:n], wire.TypeProbe, r.up, &h, func(b []byte) { r.back.Write(b) })
	}
}

func (r *Relay) downstream() {
	buf := make([]byte, 65536)
	var h held
	for {
		n, err := r.back.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP from a reflector not yet up, and such
		}
		to := r.client.Load()
		if to == nil {
			continue
		}
		r.forward(buf[:n], wire.TypeReply, r.down, &h, func(b []byte) { r.front.WriteToUDPAddrPort(b, *to) })
	}
}

// forward applies rule to msg if it is of type t, and sends it with send;
// behind is the direction's message held Behind.
func (r *Relay) forward(msg []byte, t wire.Type, rule Rule, behind *held, send func([]byte)) {
	var h wire.Header
	var act Action
	if rule != nil && h.Decode(msg) == nil && h.Type == t {
		act = rule(h)
	}
	if act.Drop {
		return
	}
	copies := 1
	if act.Duplicate {
		copies = 2
	}
	if act.Behind && behind.msg == nil {
		behind.msg, behind.copies = append([]byte(nil), msg...), copies
		return
	}
	if act.Delay == 0 || act.Behind {
		for range copies {
			send(msg)
		}
		if behind.msg != nil {
			for range behind.copies {
				send(behind.msg)
			}
			behind.msg = nil
		}
		return
	}
	later := append([]byte(nil), msg...)
	r.timers.Add(1)
	time.AfterFunc(act.Delay, func() {
		defer r.timers.Done()
		for range copies {
			send(later)
		}
	})
}
