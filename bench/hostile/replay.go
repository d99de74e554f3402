package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/wire"
)

// replay phases: what the victim's socket counts its bytes under.
var replayPhases = []string{"legit", "live-probe", "after-close-probe", "after-close-close", "after-sweep-probe", "after-sweep-close"}

// replay: a legitimate session from the victim's address that asks for
// -reply-byte replies, recorded, then its probe and Close replayed from
// the victim's address (forged with a raw socket where root allows):
// inside the live session, after its Close and after the reflector's idle
// sweep. The victim's socket counts what reaches it.
func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var af attackFlags
	af.register(fs)
	var rf replayFlags
	rf.register(fs)
	ctx, cancel, t, _, err := af.parse(fs, args)
	if err != nil {
		return err
	}
	defer cancel()
	if err := wantUDP(t); err != nil {
		return err
	}
	victim, err := rf.check()
	if err != nil {
		return err
	}
	vc, err := listenVictim(victim)
	if err != nil {
		return err
	}
	defer vc.Close()
	vap := vc.LocalAddr().(*net.UDPAddr).AddrPort()
	dst := net.UDPAddrFromAddrPort(t.ap)
	rec, err := record(vc, dst, rf.key, rf.reply)
	if err != nil {
		return err
	}

	// From here the victim's socket only counts.
	var v victimCount
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.read(vc, rec.token)
	}()
	defer func() { vc.Close(); <-done }()

	send, how, rs, err := replaySender(rf.spoof, vc, dst, vap, t.ap)
	if err != nil {
		return err
	}
	if rs != nil {
		defer rs.close()
	}
	ready(fmt.Sprintf("recorded a %d-byte probe that got a %d-byte reply; replaying from %s, spoof %s", len(rec.probe), rec.got, vap, how))
	r := replayer{victim: &v, send: send, count: rf.count}
	r.run(ctx, 1, rec.probe)
	if err := closeLegit(ctx, vc, dst, rec.closeMsg, &v.closeAcked); err != nil {
		return err
	}
	r.run(ctx, 2, rec.probe)
	r.run(ctx, 3, rec.closeMsg)
	sleepCtx(ctx, rf.idle+1500*time.Millisecond) // the idle sweep runs every second
	r.run(ctx, 4, rec.probe)
	r.run(ctx, 5, rec.closeMsg)
	r.print(how, victim, len(rec.probe))
	return nil
}

// replayFlags are the flags of replay besides attackFlags.
type replayFlags struct {
	victim, key, spoof string
	reply, count       int
	idle               time.Duration
}

func (rf *replayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.victim, "victim", "127.0.0.9", "the victim's address, a loopback address the legitimate session runs from")
	fs.StringVar(&rf.key, "key", "", "the reflector's shared key (the legitimate session is signed with it)")
	fs.IntVar(&rf.reply, "reply", 65000, "reply size the recorded probe asks for")
	fs.IntVar(&rf.count, "count", 100, "replays of each message in each phase")
	fs.DurationVar(&rf.idle, "idle", 2*time.Second, "the reflector's --idle-timeout: the replays after the sweep wait this long and 1.5 s more")
	fs.StringVar(&rf.spoof, "spoof", "auto", "raw: forge the victim's source address with a raw socket (IP_HDRINCL); none: send from the victim's socket; auto: raw if it can")
}

// check checks the flags and returns the victim's address.
func (rf *replayFlags) check() (netip.Addr, error) {
	victim, err := netip.ParseAddr(rf.victim)
	if err != nil || !victim.Is4() || !victim.IsLoopback() {
		return netip.Addr{}, usagef("-victim %q: want an address on 127.0.0.0/8", rf.victim)
	}
	if rf.count < 1 || rf.count > 100000 || rf.reply < wire.HeaderLen || rf.reply > 65000 || rf.idle < 0 {
		return netip.Addr{}, usagef("want -count 1 to 100000, -reply %d to 65000, -idle of 0 or more", wire.HeaderLen)
	}
	if rf.spoof != "auto" && rf.spoof != "raw" && rf.spoof != "none" {
		return netip.Addr{}, usagef("-spoof %q: want auto, raw or none", rf.spoof)
	}
	return victim, nil
}

// listenVictim opens the victim's socket, with a receive buffer large
// enough to count a burst of replies.
func listenVictim(victim netip.Addr) (*net.UDPConn, error) {
	vc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: victim.AsSlice()})
	if err != nil {
		return nil, err
	}
	_ = rawControl(vc, func(fd int) { _ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20) })
	return vc, nil
}

// recording is replay's legitimate session: its token, its probe and its
// Close as sealed, and the size of the probe's reply.
type recording struct {
	token           uint64
	probe, closeMsg []byte
	got             int
}

// record runs the legitimate session from the victim's socket vc, signed
// with key when there is one: a Hello, its Cookie, and a probe asking for
// reply-byte replies, answered. Its Close is sealed but not sent.
func record(vc *net.UDPConn, dst *net.UDPAddr, key string, reply int) (recording, error) {
	var signer *wire.Signer
	tag := 0
	if key != "" {
		signer, tag = wire.NewSigner([]byte(key)), wire.TagLen
	}
	seal := func(h wire.Header) []byte {
		msg := make([]byte, wire.HeaderLen+tag)
		h.Seal(msg, signer)
		return msg
	}
	nc := nonce() // the Hello's
	ans, _, err := exchange(vc, dst, seal(helloHeader(nc, uint32(reply))),
		func(h wire.Header) bool { return answersHello(h, nc) }, nil, nil)
	if err != nil {
		return recording{}, fmt.Errorf("the legitimate session's hello: %w", err)
	}
	if ans.Type == wire.TypeError {
		return recording{}, fmt.Errorf("the legitimate session was refused: %s", ans.Code)
	}
	token := ans.Token
	probe := seal(wire.Header{Type: wire.TypeProbe, Token: token, Seq: 1, T1: time.Now().UnixNano(), Nonce: nc, ReplySize: uint32(reply)})
	_, got, err := exchange(vc, dst, probe,
		func(h wire.Header) bool { return h.Type == wire.TypeReply && h.Token == token && h.Seq == 1 }, nil, nil)
	if err != nil {
		return recording{}, fmt.Errorf("the legitimate session's probe: %w", err)
	}
	closeMsg := seal(wire.Header{Type: wire.TypeClose, Token: token, Seq: 2, T1: time.Now().UnixNano(), Nonce: nc})
	return recording{token: token, probe: probe, closeMsg: closeMsg, got: got}, nil
}

// victimCount counts the packets and bytes that reach the victim's
// socket, per replay phase, and sees the legitimate session's CloseAck.
type victimCount struct {
	phase       atomic.Int32
	pkts, bytes [6]atomic.Uint64
	closeAcked  atomic.Bool
}

// read reads vc until it is closed; token is the legitimate session's.
func (v *victimCount) read(vc *net.UDPConn, token uint64) {
	buf := make([]byte, 70000)
	for {
		n, err := vc.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		ph := v.phase.Load()
		v.pkts[ph].Add(1)
		v.bytes[ph].Add(uint64(n))
		var h wire.Header
		if ph == 0 && h.Decode(buf[:n]) == nil && h.Type == wire.TypeCloseAck && h.Token == token {
			v.closeAcked.Store(true)
		}
	}
}

// replaySender returns how replay sends: with a raw socket that forges
// the victim's address from (rs, for the caller to close), or from the
// victim's own socket vc; how says which, and why.
func replaySender(spoof string, vc *net.UDPConn, dst *net.UDPAddr, from, to netip.AddrPort) (send func([]byte) error, how string, rs *rawSender, err error) {
	send = func(b []byte) error { _, err := vc.WriteToUDP(b, dst); return err }
	if spoof == "none" {
		return send, "none: sent from the victim's own socket", nil, nil
	}
	rs, err = newRawSender(from, to)
	switch {
	case err == nil:
		return rs.send, "raw: the victim's source address forged with IP_HDRINCL", rs, nil
	case spoof == "raw":
		return nil, "", nil, err
	}
	return send, fmt.Sprintf("none: sent from the victim's own socket (a raw socket: %v)", err), nil, nil
}

// closeLegit sends the legitimate session's Close from the victim's
// socket until it is acknowledged, up to 3 times.
func closeLegit(ctx context.Context, vc *net.UDPConn, dst *net.UDPAddr, closeMsg []byte, acked *atomic.Bool) error {
	for try := 0; try < 3 && !acked.Load() && ctx.Err() == nil; try++ {
		if _, err := vc.WriteToUDP(closeMsg, dst); err != nil {
			return fmt.Errorf("the legitimate close: %w", err)
		}
		sleepCtx(ctx, 300*time.Millisecond)
	}
	return nil
}

// replayer replays the recorded messages phase by phase and counts what
// it sent.
type replayer struct {
	victim              *victimCount
	send                func([]byte) error
	count               int
	sentPkts, sentBytes [6]uint64
	errs                errorNotes
}

// run sends msg count times, a millisecond apart, as phase ph, and waits
// for the answers.
func (r *replayer) run(ctx context.Context, ph int, msg []byte) {
	r.victim.phase.Store(int32(ph))
	for range r.count {
		if ctx.Err() != nil {
			break
		}
		if err := r.send(msg); err != nil {
			r.errs.note("replay", err)
			continue
		}
		r.sentPkts[ph]++
		r.sentBytes[ph] += uint64(len(msg))
		time.Sleep(time.Millisecond)
	}
	sleepCtx(ctx, 400*time.Millisecond) // the answers
	r.victim.phase.Store(0)
}

// print writes what the replays came to: a line for the run, one per
// phase, and the ledger of the phases that count in the verdict.
func (r *replayer) print(how string, victim netip.Addr, msgLen int) {
	v := r.victim
	fmt.Printf("replay: spoof %s; the legitimate session's close acknowledged: %v; errors: %s\n", how, v.closeAcked.Load(), r.errs.summary())
	var l ledger
	for ph := 1; ph < len(replayPhases); ph++ {
		rt := ratio(r.sentBytes[ph], v.bytes[ph].Load())
		note := ""
		if ph == 1 {
			note = " (not in the verdict: copies inside the live session)"
		} else {
			// Per phase: each is a way to attack, not a share of one.
			l.add(victim.String()+" "+replayPhases[ph], r.sentBytes[ph], v.bytes[ph].Load())
		}
		fmt.Printf("replay %s: sent %d × %d B = %d B; the victim got %d packets, %d B: ×%s%s\n", replayPhases[ph],
			r.sentPkts[ph], msgLen, r.sentBytes[ph], v.pkts[ph].Load(), v.bytes[ph].Load(), ratioText(rt), note)
	}
	l.print()
}

// rawSender sends UDP datagrams with a forged source address.
type rawSender struct {
	fd       int
	src, dst netip.AddrPort
}

func newRawSender(src, dst netip.AddrPort) (*rawSender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("open a raw socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_HDRINCL, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set IP_HDRINCL: %w", err)
	}
	return &rawSender{fd: fd, src: src, dst: dst}, nil
}

func (r *rawSender) send(payload []byte) error {
	return unix.Sendto(r.fd, udpPacket(r.src, r.dst, payload), 0, &unix.SockaddrInet4{Addr: r.dst.Addr().As4()})
}

func (r *rawSender) close() { unix.Close(r.fd) }

// udpPacket builds an IPv4 datagram carrying payload in UDP from src to dst.
func udpPacket(src, dst netip.AddrPort, payload []byte) []byte {
	n := 20 + 8 + len(payload)
	b := make([]byte, n)
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	b[0] = 0x45 // version 4, 5 words of header
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	binary.BigEndian.PutUint16(b[4:], uint16(nonce()))
	b[8] = 64 // TTL
	b[9] = unix.IPPROTO_UDP
	copy(b[12:16], s4[:])
	copy(b[16:20], d4[:])
	binary.BigEndian.PutUint16(b[10:], checksum(b[:20]))
	u := b[20:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	copy(u[8:], payload)
	pseudo := make([]byte, 12, 12+len(u))
	copy(pseudo[0:4], s4[:])
	copy(pseudo[4:8], d4[:])
	pseudo[9] = unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(u)))
	sum := checksum(append(pseudo, u...))
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], sum)
	return b
}

// checksum is the Internet checksum of b.
func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}
