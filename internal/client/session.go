package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// start opens the session and the result.
func (r *run) start(ctx context.Context) error {
	// Before the handshake: a kernel that starts stamping takes a moment.
	stampsUsed, err := r.setupStamps()
	if err != nil {
		return err
	}
	r.setupPath()
	if f, ok := r.conn.(Foreign); ok {
		if err := r.openForeign(f); err != nil {
			return err
		}
	} else if err := r.handshake(ctx); err != nil {
		return err
	}
	cfg := &r.cfg
	r.res = &result.Result{
		SchemaVersion: result.SchemaVersion,
		Tool:          "volley",
		Config: result.Config{
			Transport:      r.conn.RemoteAddr().Network(),
			LocalAddr:      r.conn.LocalAddr().String(),
			RemoteAddr:     r.conn.RemoteAddr().String(),
			Duration:       cfg.Duration,
			Count:          cfg.Count,
			WarmupDuration: cfg.WarmupDuration,
			WarmupCount:    cfg.WarmupCount,
			Size:           cfg.Size,
			Window:         cfg.Window,
			Timeout:        cfg.Timeout,
			ReportInterval: max(cfg.ReportInterval, 0),
			Percentiles:    cfg.Percentiles,
			Timestamps:     stampsUsed,
			Rate:           cfg.Rate,
			RateMax:        cfg.Unpaced,
			SendInterval:   cfg.SendInterval,
			Poisson:        cfg.Poisson,
			Burst:          cfg.Burst,
			ReplySize:      cfg.ReplySize,
			Hold:           cfg.Hold,
			Granted:        r.grant,
			OneWay:         cfg.OneWay,
			Period:         cfg.Period,
			Threshold:      cfg.Threshold,
			ThresholdSkip:  cfg.ThresholdSkip,
			Parallel:       1,
			Socket:         cfg.Socket,
		},
		Start:     cfg.Clock.Time(r.clk.Now()),
		Intervals: []result.Interval{},
	}
	if cfg.Poisson || len(cfg.Workload) > 0 {
		r.res.Config.Seed = cfg.Seed
	}
	if r.foreign != nil {
		r.res.Config.Peer = r.foreign.Peer()
	}
	if cfg.WireSize > 0 {
		r.res.Config.Size = cfg.WireSize
	}
	if tc, ok := r.conn.(transport.TCPConn); ok {
		if ti, err := tc.TCPInfo(); err == nil {
			r.tcp, r.tcpRetrans = tc, ti.TotalRetrans
			r.res.Config.TCP = &result.TCPConnect{ConnectTime: tc.ConnectTime(), Cwnd: ti.Cwnd, MSS: ti.MSS, RTT: ti.RTT}
		}
	}
	return nil
}

// handshake sends Hellos until a Cookie answers, and keeps its token.
func (r *run) handshake(ctx context.Context) error {
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return fmt.Errorf("make handshake nonce: %w", err)
	}
	nonce := binary.BigEndian.Uint64(nb[:])
	r.nonce = nonce
	hello := r.hello(nonce)
	badTags := 0
	for try := 1; try <= r.cfg.HandshakeTries; try++ {
		hello.T1 = r.clk.Now()
		msg := r.helloMsg()
		r.encode(&hello, msg)
		if err := r.guard.within(hello.T1, r.cfg.Timeout, true); err != nil {
			return err
		}
		if _, err := r.conn.Write(msg); err != nil {
			return r.noReflector(err)
		}
		deadline := hello.T1 + int64(r.cfg.Timeout)
		if err := r.conn.SetReadDeadline(r.clk.Time(deadline)); err != nil {
			return fmt.Errorf("set read deadline: %w", err)
		}
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			n, err := r.conn.Read(r.rbuf)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break
				}
				return r.noReflector(err)
			}
			var h wire.Header
			if h.Decode(r.rbuf[:n]) != nil || h.Seq != nonce {
				continue
			}
			switch done, bad, err := r.helloAnswer(&h, r.rbuf[:n]); {
			case err != nil:
				return err
			case done:
				return nil
			case bad:
				badTags++
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if badTags > 0 {
		return fmt.Errorf("%w at %s: its answers carry no valid tag (it has no key, or another)", ErrAuth, r.peer)
	}
	over := time.Duration(r.cfg.HandshakeTries) * r.cfg.Timeout
	return fmt.Errorf("%w at %s after %d tries over %s", ErrNoReflector, r.peer, r.cfg.HandshakeTries, over)
}

// helloAnswer handles h, the header of msg, an answer to the Hello with
// h.Seq as its nonce: done when it is the Cookie that opens the session,
// bad when it carries no valid tag, an error when the reflector refused.
func (r *run) helloAnswer(h *wire.Header, msg []byte) (done, bad bool, err error) {
	if h.Type == wire.TypeError {
		// Unsigned by design: a client without the key must be able to
		// read why it was refused.
		switch code := h.Code; {
		case code == wire.ErrorNoKey:
			return false, false, r.noKey()
		case code == wire.ErrorAuth && r.signer == nil:
			return false, false, fmt.Errorf("%w at %s: the reflector requires a key (--key)", ErrAuth, r.peer)
		case code == wire.ErrorAuth:
			return false, false, fmt.Errorf("%w at %s: the reflector has a different key", ErrAuth, r.peer)
		default:
			return false, false, fmt.Errorf("%w at %s: %s", ErrRefused, r.peer, code)
		}
	}
	if !r.verified(h, msg) {
		if h.Type == wire.TypeCookie && h.Flags&wire.FlagAuth == 0 {
			// An unsigned Cookie for this Hello's nonce: a reflector
			// without a key (one from before ErrorNoKey) took the Hello.
			return false, false, r.noKey()
		}
		return false, true, nil
	}
	if h.Type != wire.TypeCookie {
		return false, false, nil
	}
	r.opened = r.clk.Now()
	r.token = h.Token
	r.heardAt(r.opened)
	r.segs = []segment{{token: h.Token, nonce: h.Seq, first: 1}}
	if r.openLoop != nil {
		r.openLoop.session.Store(&sessionKey{token: h.Token, nonce: h.Seq})
	}
	r.grant = result.Grant{ReplySize: int(h.ReplySize), Hold: time.Duration(h.HoldMicro) * time.Microsecond, MaxRate: float64(h.RateLimit)}
	r.sameClock = sameClock(r.clk, h)
	return true, false, nil
}

// sameClock reports whether the reflector whose Cookie is h reads the
// client's clock clk (see wire.FlagClockID).
func sameClock(clk clock.Clock, h *wire.Header) bool {
	id := wire.ClockIDOf(h)
	return id != 0 && id == clock.IdentityOf(clk)
}

// noKey is the error of a keyed handshake with a reflector that has no
// key.
func (r *run) noKey() error {
	return fmt.Errorf("%w at %s: the reflector has no key (give it the same --key or --key-file, or run the client without one)", ErrAuth, r.peer)
}

// hello returns the Hello with nonce, and clears the send buffer it goes
// out in: the Hello is as large as the probes, so the reflector may answer
// a client of any size without ever amplifying.
func (r *run) hello(nonce uint64) wire.Header {
	clear(r.buf)
	return wire.Header{Type: wire.TypeHello, Seq: nonce, ReplySize: uint32(r.cfg.ReplySize), HoldMicro: uint32(r.cfg.Hold / time.Microsecond)}
}

// helloMsg returns the send buffer's part a Hello goes out in: all of it
// over datagrams, as said above; over a stream (TCP, Unix), whose
// connection shows the client's address already, the header (and tag)
// alone, since a reflector takes only small messages from a connection
// before its handshake.
func (r *run) helloMsg() []byte {
	if r.stream {
		return r.buf[:min(len(r.buf), wire.HeaderLen+wire.TagLen)]
	}
	return r.buf
}

// encode writes h into msg, signed when there is a key (the tag takes the
// last bytes of msg).
func (r *run) encode(h *wire.Header, msg []byte) { h.Seal(msg, r.signer) }

// verified reports whether msg, whose header is h, is properly signed, or
// needs no signature.
func (r *run) verified(h *wire.Header, msg []byte) bool {
	return r.signer == nil || (h.Flags&wire.FlagAuth != 0 && r.signer.Verify(msg) == nil)
}

// gone is the error of a run whose reflector went away, from the error
// err that said so (nil: the sender's).
func (r *run) gone(err error) error {
	switch {
	case r.stream && err != nil:
		return fmt.Errorf("%w: %s closed the connection (%w)", ErrGone, r.peer, err)
	case r.stream:
		return fmt.Errorf("%w: %s closed the connection", ErrGone, r.peer)
	case r.conn.RemoteAddr().Network() == "dbus" && err != nil:
		return fmt.Errorf("%w: %s: %v", ErrGone, r.peer, err)
	}
	return fmt.Errorf("%w: %s port unreachable", ErrGone, r.peer)
}

func (r *run) noReflector(err error) error {
	if transport.IsPeerGone(err) {
		switch {
		case r.conn.RemoteAddr().Network() == "dbus":
			return fmt.Errorf("%w at %s: no connection on the bus has that name", ErrNoReflector, r.peer)
		case r.stream:
			// It took the connection, then closed it: something listens.
			return fmt.Errorf("%w at %s: it closed the connection without answering (%v)", ErrNoReflector, r.peer, err)
		}
		return fmt.Errorf("%w at %s: port unreachable (nothing listens there)", ErrNoReflector, r.peer)
	}
	return fmt.Errorf("%w at %s: %w", ErrNoReflector, r.peer, err)
}

// close ends the session and asks for the reflector's final count.
func (r *run) close() {
	r.res.ReflectorCount = "last-reply"
	if r.token == 0 {
		return
	}
	// Replies that straggle in now still count as late or duplicate.
	h := wire.Header{Type: wire.TypeClose, Token: r.token, Nonce: r.nonce}
	if r.stamps != nil && r.stamps.reflector {
		h.Flags = wire.FlagStamps // the transmit stamps still owed come back with the CloseAck
	}
	tag := 0
	if r.signer != nil {
		tag = wire.TagLen
	}
	// The CloseAck is no larger than the Close: make room for what it
	// carries.
	size := wire.HeaderLen
	switch {
	case r.cfg.OneWay:
		size = wire.CloseOneWayLen
	case h.Flags&wire.FlagStamps != 0:
		size = wire.CloseStampsLen
	}
	size = min(size+tag, max(r.cfg.MaxMessage, wire.HeaderLen+tag))
	buf := r.buf[:wire.HeaderLen+tag]
	if size > len(buf) {
		buf = make([]byte, size) // once a run
	}
	// The tries share what is left of the wind-down: each waits at most
	// min(Timeout, 1s), and the last ends by endBy.
	r.beginWindDown()
	if r.cfg.OneWay && r.reorders() {
		// A probe the network reordered behind the Close still counts:
		// the first Close says how many were sent, and the reflector
		// answers once they all came, or at the next Close, sent when a
		// timeout has passed. The wait is on top of the wind-down.
		h.Flags |= wire.FlagOneWay
		h.Seq = r.sentSoFar()
		h.T1 = r.clk.Now()
		r.encode(&h, buf)
		acked, failed := r.closeTry(buf, h.T1, int64(r.cfg.Timeout), tag)
		if acked || failed {
			return
		}
		r.endBy += r.clk.Now() - h.T1
		h.Flags &^= wire.FlagOneWay
	}
	tries, most := r.cfg.HandshakeTries, int64(min(r.cfg.Timeout, time.Second))
	if r.stream {
		tries = 1 // a stream does not lose the close: sending it again is no use
	}
	for try := 0; try < tries; try++ {
		h.Seq = uint64(try + 1)
		h.T1 = r.clk.Now()
		wait := min(most, (r.endBy-h.T1)/int64(tries-try))
		if wait <= 0 {
			return
		}
		r.encode(&h, buf)
		if acked, failed := r.closeTry(buf, h.T1, wait, tag); acked || failed {
			return
		}
	}
}

// reorders reports whether the run's transport may deliver messages out of
// order: UDP may; streams, Unix datagrams and a bus keep their order.
func (r *run) reorders() bool { return r.conn.RemoteAddr().Network() == "udp" }

// closeTry sends the encoded Close msg at t1 and reads until its CloseAck
// comes (acked) or wait has passed, taking in the replies that straggle
// in meanwhile; failed says the connection failed.
func (r *run) closeTry(msg []byte, t1, wait int64, tag int) (acked, failed bool) {
	if err := r.guard.within(t1, time.Duration(wait), false); err != nil {
		return false, true
	}
	if _, err := r.conn.Write(msg); err != nil {
		return false, true
	}
	if err := r.conn.SetReadDeadline(r.clk.Time(t1 + wait)); err != nil {
		return false, true
	}
	var in wire.Header
	for {
		n, err := r.conn.Read(r.rbuf)
		now := r.clk.Now()
		if err != nil {
			return false, !errors.Is(err, os.ErrDeadlineExceeded)
		}
		if in.Decode(r.rbuf[:n]) != nil || !r.verified(&in, r.rbuf[:n]) {
			continue
		}
		seg := r.tokenSeg(in.Token)
		if seg < 0 {
			continue
		}
		switch {
		case in.Type == wire.TypeReply:
			r.takeReply(&in, n, now, seg, nil, tstamp.Stamp{})
		case in.Type == wire.TypeCloseAck && in.Token == r.token:
			r.res.ReflectorCount = "close"
			r.finalCount = in.Received
			if r.stamps != nil && in.Flags&wire.FlagStamps != 0 && !r.cfg.OneWay {
				wire.FollowUps(r.rbuf[wire.HeaderLen:n-tag], r.followUp)
			}
			if r.cfg.OneWay && n > wire.HeaderLen+tag {
				var res wire.OneWayResults
				if res.Decode(bytes.Clone(r.rbuf[wire.HeaderLen:n-tag])) == nil {
					r.oneway = &res
				}
			}
			return true, false
		}
	}
}

// finish fills in the result once the session is over: the recorder's
// summary, and what the session adds to it (the one-way results, the
// clock offset, where the times came from).
func (r *run) finish() error {
	if r.warm {
		// Ended before the measurement started (an open-loop run before
		// its first slot): an empty one, from now.
		r.endWarmup(r.seq, r.clk.Now())
	}
	end := r.clk.Now()
	if r.sendEnd > r.origin {
		end = r.sendEnd
	}
	r.summarize(end)
	if r.cfg.OneWay {
		return r.finishOneWay()
	}
	sum := &r.res.Summary
	r.res.Histogram = histogram(&r.cfg, r.total)
	r.res.Distribution = distribution(&r.cfg, r.total)
	r.res.ClockOffset = clockOffset(&r.offset, r.sameClock, sum.Up, sum.Down)
	r.res.Timestamps = r.stampsResult()
	r.finishPath()
	return nil
}
