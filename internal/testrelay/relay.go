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
	for {
		n, from, err := r.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		r.client.Store(&from)
		r.forward(buf[:n], wire.TypeProbe, r.up, func(b []byte) { r.back.Write(b) })
	}
}

func (r *Relay) downstream() {
	buf := make([]byte, 65536)
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
		r.forward(buf[:n], wire.TypeReply, r.down, func(b []byte) { r.front.WriteToUDPAddrPort(b, *to) })
	}
}

// forward applies rule to msg if it is of type t, and sends it with send.
func (r *Relay) forward(msg []byte, t wire.Type, rule Rule, send func([]byte)) {
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
	if act.Delay == 0 {
		for range copies {
			send(msg)
		}
		return
	}
	held := append([]byte(nil), msg...)
	r.timers.Add(1)
	time.AfterFunc(act.Delay, func() {
		defer r.timers.Done()
		for range copies {
			send(held)
		}
	})
}
