package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
	"github.com/volley-net/volley/internal/wire"
)

// fakeStamper is a socket's kernel stamps as a test sets them: the
// transmit stamps waiting on its error queue, in the order given. With
// apart, the first stamp of each probe is read before the others are
// queued (by a drain for another probe's reply); with early, before the
// probe is recorded as sent (as an open-loop receiver can, between
// taking in the sender's records and reading the stamps).
type fakeStamper struct {
	next  uint32
	queue []tstamp.TxStamp
	head  int
	apart bool
	early bool
}

func (f *fakeStamper) EnableTimestamps(bool) error { return nil }
func (f *fakeStamper) NextTxID() uint32            { return f.next }

func (f *fakeStamper) ReadTxStamps(st []tstamp.TxStamp) (int, error) {
	n := copy(st, f.queue[f.head:])
	f.head += n
	if f.head == len(f.queue) {
		f.queue, f.head = f.queue[:0], 0
	}
	return n, nil
}

// stampedRun returns a measuring run whose socket's stamps are fs's, and
// probe, which sends one probe, queues its transmit stamps as stamps says
// (given the probe's ID and the time the tool read the clock for it),
// and records its reply, received 100 µs after the send.
func stampedRun(t testing.TB, fs *fakeStamper, stamps func(id uint32, sent int64) []tstamp.TxStamp) (r *run, probe func()) {
	t.Helper()
	r, _ = measuringRun(t, Config{Count: 1, history: 4096})
	r.stamps = &stamping{sock: fs, holdEarly: fs.early} // early: as an open loop's
	clk := clock.NewFake(r.clk.Now())
	r.clk = clk
	var h wire.Header
	return r, func() {
		id := fs.next
		clk.Advance(time.Millisecond)
		queued := stamps(id, clk.Now())
		if fs.early && len(queued) > 0 {
			fs.queue = append(fs.queue, queued[0])
			r.drainTx()
			queued = queued[1:]
		}
		if err := r.send(); err != nil {
			t.Fatal(err)
		}
		if fs.early {
			r.giveEarly() // as an open loop's receiver does once it takes the probe in
		}
		fs.next++
		s := &r.ring[r.seq&r.mask]
		if fs.apart && len(queued) > 0 {
			fs.queue = append(fs.queue, queued[0])
			r.drainTx()
			queued = queued[1:]
		}
		fs.queue = append(fs.queue, queued...)
		n, _ := r.conn.Read(r.rbuf)
		if err := h.Decode(r.rbuf[:n]); err != nil {
			t.Fatal(err)
		}
		t4 := s.sent + 100_000
		r.reply(&h, n, t4, 0, r.rbuf[:n], tstamp.Stamp{SW: t4 - 5_000})
	}
}

// TestLocalQueue: a probe's scheduler stamp and its transmit stamp, read
// in either order, or in separate reads, give its time in the local
// queue (transmit less scheduler); the send stack stays T1k-T1; without
// the scheduler's stamp the local queue has no value and the rest is as
// before.
func TestLocalQueue(t *testing.T) {
	const stack, queue = 2_000, 3_000_000 // ns before the queue, in it
	sched := func(id uint32, sent int64) tstamp.TxStamp {
		return tstamp.TxStamp{ID: id, Sched: true, Stamp: tstamp.Stamp{SW: sent + stack}}
	}
	snd := func(id uint32, sent int64) tstamp.TxStamp {
		return tstamp.TxStamp{ID: id, Stamp: tstamp.Stamp{SW: sent + stack + queue}}
	}
	for _, tt := range []struct {
		name   string
		apart  bool
		early  bool
		stamps func(id uint32, sent int64) []tstamp.TxStamp
		queued bool
	}{
		{"scheduler first", false, false, func(id uint32, sent int64) []tstamp.TxStamp {
			return []tstamp.TxStamp{sched(id, sent), snd(id, sent)}
		}, true},
		{"transmit first", false, false, func(id uint32, sent int64) []tstamp.TxStamp {
			return []tstamp.TxStamp{snd(id, sent), sched(id, sent)}
		}, true},
		{"read apart", true, false, func(id uint32, sent int64) []tstamp.TxStamp {
			return []tstamp.TxStamp{sched(id, sent), snd(id, sent)}
		}, true},
		{"scheduler stamp read before the probe is recorded", false, true, func(id uint32, sent int64) []tstamp.TxStamp {
			return []tstamp.TxStamp{sched(id, sent), snd(id, sent)}
		}, true},
		{"no scheduler stamp", false, false, func(id uint32, sent int64) []tstamp.TxStamp {
			return []tstamp.TxStamp{snd(id, sent)}
		}, false},
		{"a stamp taken before the probe", false, false, func(id uint32, sent int64) []tstamp.TxStamp {
			early := sched(id, sent)
			early.SW = sent - 1
			return []tstamp.TxStamp{early, snd(id, sent)}
		}, false},
		{"the NIC's transmit stamp", false, false, func(id uint32, sent int64) []tstamp.TxStamp {
			hw := snd(id, sent)
			hw.HW, hw.SW = hw.SW, 0
			return []tstamp.TxStamp{sched(id, sent), hw}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := &fakeStamper{apart: tt.apart, early: tt.early}
			r, probe := stampedRun(t, fs, tt.stamps)
			const n = 50
			for range n {
				probe()
			}
			k := r.cur.kernelSummary([]float64{50})
			if k == nil {
				t.Fatal("no kernel figures")
			}
			if k.SendStack.Count != n || k.SendStack.Min != stack+queue || k.SendStack.Max != stack+queue {
				t.Errorf("send stack %+v, want %d values of %d ns (T1k-T1, the queue included)", k.SendStack, n, stack+queue)
			}
			want, wantMin := int64(0), int64(0)
			if tt.queued {
				want, wantMin = n, queue
			}
			if k.LocalQueue.Count != want || int64(k.LocalQueue.Min) != wantMin || int64(k.LocalQueue.Max) != wantMin {
				t.Errorf("local queue %+v, want %d values of %d ns", k.LocalQueue, want, wantMin)
			}
			if k.RTT.Count != n {
				t.Errorf("rtt kern %d values, want %d", k.RTT.Count, n)
			}
		})
	}
}

// TestEarlyStamps: an open-loop sender can send many probes between two
// looks of the receiver at its records. The transmit stamps of all of
// them, read before their records, reach their probes: none is dropped
// for want of room, since the reads stop while some wait, and go on once
// the probes are taken in. A stamp that is no probe's (a reconnection's
// Hello) does not stop them for longer; in a closed loop, not at all.
func TestEarlyStamps(t *testing.T) {
	for _, open := range []bool{true, false} {
		t.Run(fmt.Sprint("open loop ", open), func(t *testing.T) {
			fs := &fakeStamper{}
			r, _ := measuringRun(t, Config{Count: 1, history: 4096})
			r.stamps = &stamping{sock: fs, holdEarly: open}
			r.openLoop = newOpenLoop(&r.cfg)
			const n = 300     // several reads' worth (txRead)
			const hello = 120 // the ID of a datagram that is no probe
			base := r.clk.Now()
			stamps := func(id uint32) {
				fs.queue = append(fs.queue, tstamp.TxStamp{ID: id, Sched: true, Stamp: tstamp.Stamp{SW: base + 1_000}},
					tstamp.TxStamp{ID: id, Stamp: tstamp.Stamp{SW: base + 2_000}})
			}
			if open { // all sent before the receiver's first look
				for id := range uint32(n + 1) {
					stamps(id)
				}
				r.drainTx()
			}
			first := r.seq + 1
			for i, id := uint64(0), uint32(0); i < n; i, id = i+1, id+1 {
				if id == hello {
					if !open {
						stamps(id)
					}
					id++
				}
				rec := sentRecord{seq: first + i, sent: base, sched: base, size: 64, txID: id}
				if open {
					r.openLoop.sent.push(rec)
					if i%50 == 49 {
						r.drain() // the receiver's next look, part of the way
					}
				} else {
					r.sentScheduled(&rec) // a closed loop's probe is taken in, then sent
					stamps(id)
				}
				if i%50 == 25 {
					r.drainTx()
				}
			}
			if open {
				r.drain()
			}
			r.drainTx()
			missing := 0
			for i := range uint64(n) {
				if k := r.ring[(first+i)&r.mask].kern; k.t1k != base+2_000 || k.sched != base+1_000 {
					missing++
				}
			}
			if missing > 0 || fs.head != 0 || len(fs.queue) != 0 {
				t.Errorf("%d of %d probes lack their transmit or scheduler stamp; %d stamps left unread", missing, n, len(fs.queue)-fs.head)
			}
		})
	}
}

// TestUnsentNote: replies to probes whose transmit stamps never came are
// counted, and the result says so.
func TestUnsentNote(t *testing.T) {
	fs := &fakeStamper{}
	r, probe := stampedRun(t, fs, func(id uint32, sent int64) []tstamp.TxStamp {
		if id%2 == 0 {
			return nil // the kernel dropped it
		}
		return []tstamp.TxStamp{{ID: id, Stamp: tstamp.Stamp{SW: sent + 1_000}}}
	})
	for range 10 {
		probe()
	}
	ts := r.stampsResult()
	if ts == nil || !slices.ContainsFunc(ts.Notes, func(n string) bool {
		return strings.HasPrefix(n, "5 replies' probes had no kernel transmit stamp")
	}) {
		t.Errorf("timestamps %+v: want a note on the 5 replies whose probes had no transmit stamp", ts)
	}
	if k := r.cur.kernelSummary([]float64{50}); k == nil || k.SendStack.Count != 5 {
		t.Errorf("kernel figures %+v: want 5 probes in the send stack", k)
	}
}

// TestStampsOfFlows: with -P, the notes count the replies of every flow.
func TestStampsOfFlows(t *testing.T) {
	var runs []*run
	for _, c := range []stampCounts{{unsent: 3, unstamped: 1}, {unsent: 4, reflector: true}} {
		r, _ := measuringRun(t, Config{Count: 1})
		r.stamps = &stamping{sock: &fakeStamper{}, stampCounts: c}
		runs = append(runs, r)
	}
	ts := stampsOfFlows(runs)
	for _, want := range []string{"7 replies' probes had no kernel transmit stamp", "1 replies came without a kernel receive stamp"} {
		if ts == nil || !slices.ContainsFunc(ts.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("timestamps %+v: want a note %q", ts, want)
		}
	}
	if ts != nil && ts.Reflector != ts.Client {
		t.Errorf("reflector stamps %q, client %q: a flow's reply carried the reflector's", ts.Reflector, ts.Client)
	}
}

// TestLocalQueueAllocs: a probe's path with both transmit stamps to read
// allocates nothing.
func TestLocalQueueAllocs(t *testing.T) {
	fs := &fakeStamper{queue: make([]tstamp.TxStamp, 0, 8)}
	r, probe := stampedRun(t, fs, func(id uint32, sent int64) []tstamp.TxStamp {
		fs.queue = append(fs.queue, tstamp.TxStamp{ID: id, Sched: true, Stamp: tstamp.Stamp{SW: sent + 10}},
			tstamp.TxStamp{ID: id, Stamp: tstamp.Stamp{SW: sent + 20}})
		return nil
	})
	probe() // the first interval's kernel histograms are made
	if allocs := testing.AllocsPerRun(200, probe); allocs != 0 {
		t.Fatalf("a stamped probe allocated %.1f times, want none", allocs)
	}
	if c := r.cur.kern[kLocalQueue].Count(); c < 200 {
		t.Fatalf("local queue has %d values, want every probe's", c)
	}
}

// TestLocalQueueLoopback: a run with kernel stamps over loopback has, for
// its probes, the scheduler's stamp and the transmit stamp, and a local
// queue no longer than the send stack. Up to 10k probes/s every probe has
// a local queue; at 40k/s, one in 4 (schedEvery).
func TestLocalQueueLoopback(t *testing.T) {
	for _, tt := range []struct {
		rate  float64
		every int64
	}{{2000, 1}, {40000, 4}} {
		t.Run(fmt.Sprint(tt.rate), func(t *testing.T) {
			conn := dialUDP(t, loopbackReflector(t))
			res, err := Run(t.Context(), Config{Count: 400, Rate: tt.rate, Stamps: tstamp.Kernel, ReportInterval: -1}, conn)
			switch {
			case errors.Is(err, ErrConfig):
				t.Skipf("skipping: no kernel stamps here: %v", err)
			case err != nil:
				t.Fatal(err)
			}
			k := res.Summary.Kernel
			if k == nil || k.SendStack.Count == 0 {
				t.Fatalf("kernel figures %+v: want the send stack of the probes", k)
			}
			if k.LocalQueue.Count == 0 && tt.every == 1 {
				t.Skip("skipping: this kernel gave no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED): no local queue")
			}
			// The probes sampled are those whose transmit-stamp IDs are
			// multiples of every: of n in a row, n/every rounded either
			// way. Those whose replies did not come have no figures.
			sent, stamped := int64(res.Summary.Counts.Sent), k.SendStack.Count
			lo, hi := sent/tt.every-(sent-stamped), min(stamped, (sent+tt.every-1)/tt.every)
			if k.LocalQueue.Count < lo || k.LocalQueue.Count > hi || k.LocalQueue.Min < 0 || k.LocalQueue.Max > k.SendStack.Max {
				t.Errorf("local queue %d values from %v to %v, send stack %d up to %v: want one for %d to %d of the probes with a transmit stamp, none below 0 or above the send stack",
					k.LocalQueue.Count, k.LocalQueue.Min, k.LocalQueue.Max, k.SendStack.Count, k.SendStack.Max, lo, hi)
			}
		})
	}
}

// TestSchedEvery: open-loop probes ask for their scheduler stamps on one
// in ceil(rate/10k), exactly; closed loops on every probe.
func TestSchedEvery(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want uint32
	}{
		{Config{}, 1},
		{Config{Rate: 1000}, 1},
		{Config{Rate: 10000}, 1},
		{Config{Rate: 10001}, 2},
		{Config{Rate: 30000}, 3},
		{Config{Rate: 70000}, 7},
		{Config{Rate: 100000}, 10},
		{Config{Rate: 300000}, 30},
		{Config{SendInterval: time.Millisecond}, 1},
		{Config{SendInterval: 100 * time.Microsecond}, 1},
		{Config{SendInterval: 30 * time.Microsecond}, 4},
		{Config{SendInterval: 10 * time.Microsecond}, 10},
		{Config{Unpaced: true}, unpacedSchedEvery},
	} {
		r := &run{cfg: tt.cfg}
		if got := r.schedEvery(); got != tt.want {
			t.Errorf("rate %v, send interval %v, unpaced %v: one probe in %d, want %d", tt.cfg.Rate, tt.cfg.SendInterval, tt.cfg.Unpaced, got, tt.want)
		}
	}
	if sendBatch%unpacedSchedEvery == 0 || unpacedSchedEvery%2 == 0 {
		t.Errorf("--rate max samples one probe in %d, batches are of %d: the sample would sit in one place of each batch", unpacedSchedEvery, sendBatch)
	}
}

// loopbackReflector serves a reflector on a UDP socket on 127.0.0.1 until
// the test ends, and returns its address.
func loopbackReflector(t *testing.T) string {
	t.Helper()
	pc, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refl, err := reflector.New(reflector.Config{ReportInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { refl.Serve(ctx, pc) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		pc.Close()
	})
	return pc.LocalAddr().String()
}

// dialUDP dials addr over udp://; the connection closes when the test
// ends.
func dialUDP(t *testing.T, addr string) transport.Conn {
	t.Helper()
	target, err := transport.ParseTarget("udp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Dial(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// BenchmarkProbePathStamped is BenchmarkProbePath with kernel stamps to
// read for each probe: the transmit stamp alone (a kernel without
// scheduler stamps), and the scheduler's beside it.
func BenchmarkProbePathStamped(b *testing.B) {
	for _, sched := range []bool{false, true} {
		name := "transmit"
		if sched {
			name = "scheduler+transmit"
		}
		b.Run(name, func(b *testing.B) {
			fs := &fakeStamper{queue: make([]tstamp.TxStamp, 0, 8)}
			r, probe := stampedRun(b, fs, func(id uint32, sent int64) []tstamp.TxStamp {
				if sched {
					fs.queue = append(fs.queue, tstamp.TxStamp{ID: id, Sched: true, Stamp: tstamp.Stamp{SW: sent + 10}})
				}
				fs.queue = append(fs.queue, tstamp.TxStamp{ID: id, Stamp: tstamp.Stamp{SW: sent + 20}})
				return nil
			})
			b.ReportAllocs()
			for b.Loop() {
				probe()
			}
			if r.cur.kern[kSendStack].Count() == 0 {
				b.Fatal("no send stack recorded")
			}
		})
	}
}
