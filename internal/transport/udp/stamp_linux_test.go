package udp

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/tstamp"
)

// TestTimestamps: with stamping on at both ends, every datagram read
// carries a kernel receive stamp between its send and its read, and every
// datagram sent gets a transmit stamp numbered in send order, on IPv4, on
// IPv6 and to an IPv4 client of a dual-stack socket.
func TestTimestamps(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", ":0"} {
		t.Run(addr, func(t *testing.T) {
			p := listenOrSkip(t, addr)
			to := p.LocalAddr().String()
			if addr == ":0" {
				to = strings.Replace(to, "[::]", "127.0.0.1", 1)
			}
			c, err := Dial(t.Context(), to)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, s := range []interface{ EnableTimestamps(bool) error }{p, c} {
				if err := s.EnableTimestamps(false); err != nil {
					t.Fatalf("EnableTimestamps: %v", err)
				}
			}
			primeStamps(t, p, c)
			const n = 5
			first := c.NextTxID()
			before := time.Now().UnixNano()
			for range n {
				if _, err := c.Write(make([]byte, 64)); err != nil {
					t.Fatal(err)
				}
			}
			ms := make([]Message, MaxBatch)
			for i := range ms {
				ms[i].Buf = make([]byte, 128)
			}
			p.SetReadDeadline(time.Now().Add(5 * time.Second))
			got := 0
			for got < n {
				k, err := p.ReadBatch(ms[got:])
				if err != nil {
					t.Fatal(err)
				}
				got += k
			}
			after := time.Now().UnixNano()
			for i, m := range ms[:n] {
				if m.Stamp.SW < before || m.Stamp.SW > after {
					t.Errorf("datagram %d: receive stamp %d outside [%d, %d]", i, m.Stamp.SW, before, after)
				}
			}
			if id := p.NextTxID(); id != 0 {
				t.Errorf("reflector's NextTxID before any send = %d, want 0", id)
			}
			if w, err := p.WriteBatch(ms[:n]); err != nil || w != n {
				t.Fatalf("WriteBatch = %d, %v", w, err)
			}
			checkTx(t, "reflector", p.ReadTxStamps, 0, n, before)
			checkTx(t, "client", c.ReadTxStamps, first, n, before)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got = 0
			for got < n {
				k, err := c.ReadBatch(ms[got:])
				if err != nil {
					t.Fatal(err)
				}
				got += k
			}
			for i, m := range ms[:n] {
				if m.Stamp.SW < after || m.Stamp.SW > time.Now().UnixNano() {
					t.Errorf("echo %d: receive stamp %d not after the reflector's read (%d)", i, m.Stamp.SW, after)
				}
			}
		})
	}
}

// stampedPair returns a reflector's socket and a client's, both with
// kernel stamps on and the kernel stamping already (primeStamps).
func stampedPair(t *testing.T) (*PacketConn, *Conn) {
	t.Helper()
	p, c := pair(t)
	for _, s := range []interface{ EnableTimestamps(bool) error }{p, c} {
		if err := s.EnableTimestamps(false); err != nil {
			t.Fatal(err)
		}
	}
	primeStamps(t, p, c)
	return p, c
}

// primeStamps waits for the kernel to start stamping received packets:
// the first socket on a machine to ask turns it on from a work queue, a
// moment later. It sends datagrams from c to p until one arrives stamped,
// and reads the transmit stamps of what it sent.
func primeStamps(t *testing.T, p *PacketConn, c *Conn) {
	t.Helper()
	ms := make([]Message, 1)
	ms[0].Buf = make([]byte, 128)
	st := make([]tstamp.TxStamp, 8)
	for range 1000 {
		if _, err := c.Write(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		p.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := p.ReadBatch(ms); err != nil {
			t.Fatal(err)
		}
		c.ReadTxStamps(st)
		if ms[0].Stamp.SW != 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no received datagram was stamped in 1000 tries")
}

// checkTx reads the transmit stamps of n datagrams, and checks they are
// numbered from first, in order, and not before start. It returns the
// scheduler's stamps read with them (the client's socket asks for them).
func checkTx(t *testing.T, who string, read func([]tstamp.TxStamp) (int, error), first uint32, n int, start int64) (sched []tstamp.TxStamp) {
	t.Helper()
	var snd []tstamp.TxStamp
	st := make([]tstamp.TxStamp, 2*n)
	for deadline := time.Now().Add(5 * time.Second); len(snd) < n && time.Now().Before(deadline); {
		k, err := read(st)
		if err != nil {
			t.Fatalf("%s: ReadTxStamps: %v", who, err)
		}
		for _, s := range st[:k] {
			if s.Sched {
				sched = append(sched, s)
			} else {
				snd = append(snd, s)
			}
		}
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(snd) != n {
		t.Fatalf("%s: %d transmit stamps, want %d", who, len(snd), n)
	}
	for i, s := range snd {
		if s.ID != first+uint32(i) || s.SW < start {
			t.Errorf("%s: transmit stamp %d = %+v, want ID %d at or after %d", who, i, s, first+uint32(i), start)
		}
	}
	return sched
}

// TestSchedStamps: the client's socket has the scheduler's stamp of each
// datagram it sends beside the one taken as it left, with the same ID,
// taken first, in the same reads; the reflector's has none.
func TestSchedStamps(t *testing.T) {
	p, c := stampedPair(t)
	const n = 8
	first := c.NextTxID()
	before := time.Now().UnixNano()
	// Sent in one batch: their stamps come back in reads of several.
	ms := make([]Message, n)
	for i := range ms {
		ms[i].Buf, ms[i].N = make([]byte, 64), 64
	}
	if w, err := c.WriteBatch(ms); err != nil || w != n {
		t.Fatalf("WriteBatch = %d, %v", w, err)
	}
	snd := make(map[uint32]int64)
	sched := make(map[uint32]int64)
	st := make([]tstamp.TxStamp, 4*n)
	for deadline := time.Now().Add(5 * time.Second); len(snd) < n && time.Now().Before(deadline); {
		k, err := c.ReadTxStamps(st)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st[:k] {
			if s.Sched {
				sched[s.ID] = s.SW
			} else {
				snd[s.ID] = s.SW
			}
		}
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(snd) != n {
		t.Fatalf("%d transmit stamps, want %d", len(snd), n)
	}
	if len(sched) == 0 {
		t.Skip("skipping: this kernel gave transmit stamps but no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED)")
	}
	for id := first; id < first+n; id++ {
		q, ok := sched[id]
		if !ok || q < before || q > snd[id] {
			t.Errorf("datagram %d: scheduler stamp %d (present %v), want one at or after %d and at or before its transmit stamp %d", id, q, ok, before, snd[id])
		}
	}
	if len(sched) != n {
		t.Errorf("%d scheduler stamps, want %d", len(sched), n)
	}
	// The reflector's socket asked for none.
	p.SetReadDeadline(time.Now().Add(5 * time.Second))
	for got := 0; got < n; {
		k, err := p.ReadBatch(ms[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += k
	}
	pfirst := p.NextTxID()
	if w, err := p.WriteBatch(ms); err != nil || w != n {
		t.Fatalf("reflector's WriteBatch = %d, %v", w, err)
	}
	if q := checkTx(t, "reflector", p.ReadTxStamps, pfirst, n, before); len(q) != 0 {
		t.Errorf("the reflector's socket has %d scheduler stamps, want none: %+v", len(q), q)
	}
}

// TestSampleSched: after SampleSched(4), the datagrams sent in batches
// whose IDs are multiples of 4 have their scheduler stamps, across the
// batches' edges, and the others, and a datagram sent alone, have their
// transmit stamp only.
func TestSampleSched(t *testing.T) {
	_, c := stampedPair(t)
	first := c.NextTxID()
	if _, err := c.Write(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	if q := checkTx(t, "before sampling", c.ReadTxStamps, first, 1, 0); len(q) == 0 {
		t.Skip("skipping: this kernel gave transmit stamps but no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED)")
	}
	if err := c.SampleSched(4); err != nil {
		t.Fatal(err)
	}
	first = c.NextTxID()
	before := time.Now().UnixNano()
	ms := make([]Message, 10)
	for i := range ms {
		ms[i].Buf, ms[i].N = make([]byte, 64), 64
	}
	// A batch, a datagram alone (ID first+10, which asks for none), and
	// a batch that starts off the sampling's beat.
	if w, err := c.WriteBatch(ms[:10]); err != nil || w != 10 {
		t.Fatalf("WriteBatch = %d, %v", w, err)
	}
	if _, err := c.Write(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	if w, err := c.WriteBatch(ms[:7]); err != nil || w != 7 {
		t.Fatalf("WriteBatch = %d, %v", w, err)
	}
	const sent = 18
	var got []uint32
	for _, q := range checkTx(t, "sampled", c.ReadTxStamps, first, sent, before) {
		got = append(got, q.ID)
	}
	var want []uint32
	for id := first; id < first+sent; id++ {
		if id%4 == 0 && id != first+10 {
			want = append(want, id)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("scheduler stamps for IDs %v, want %v (those of %d..%d that are multiples of 4, sent in batches)", got, want, first, first+sent-1)
	}
	// Enabling the stamps again undoes the sampling: no datagram carries
	// a request of its own.
	if err := c.EnableTimestamps(false); err != nil {
		t.Fatal(err)
	}
	for i := range c.b.whdrs {
		if c.b.whdrs[i].Hdr.Control != nil || c.b.schedEvery != 0 || c.SchedEvery() != 1 {
			t.Fatalf("after EnableTimestamps: datagram %d of a batch has a control message %v, sampling one in %d (SchedEvery %d): want none, and every datagram asking",
				i, c.b.whdrs[i].Hdr.Control != nil, c.b.schedEvery, c.SchedEvery())
		}
	}
}

// TestSampleSchedRefused: a kernel that refuses the per-datagram request
// (EINVAL, as before Linux 4.7: here a request the kernel cannot take)
// does not cost a datagram: the batch goes, and the socket asks for
// every datagram's scheduler stamp again.
func TestSampleSchedRefused(t *testing.T) {
	_, c := stampedPair(t)
	if err := c.SampleSched(2); err != nil {
		t.Fatal(err)
	}
	if !c.b.sched || c.b.schedEvery != 2 {
		t.Skip("skipping: this kernel gave no scheduler stamps (SOF_TIMESTAMPING_TX_SCHED)")
	}
	for i := 0; i < len(c.b.sctl); i += c.b.sctlLen {
		*(*uint32)(unsafe.Pointer(&c.b.sctl[i+unix.CmsgLen(0)])) = 1 << 30 // no such stamp
	}
	first := c.NextTxID()
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf, ms[i].N = make([]byte, 64), 64
	}
	if w, err := c.WriteBatch(ms); err != nil || w != len(ms) {
		t.Fatalf("WriteBatch = %d, %v; want all %d sent", w, err, len(ms))
	}
	if c.b.schedEvery != 0 {
		t.Errorf("sampling still on (one in %d) after the kernel refused it", c.b.schedEvery)
	}
	// The datagrams before the first that asked went without it; from
	// that one on, the socket asks for every datagram's.
	refused := first + first%2
	var got, want []uint32
	for _, q := range checkTx(t, "refused", c.ReadTxStamps, first, len(ms), 0) {
		got = append(got, q.ID)
	}
	for id := refused; id < first+uint32(len(ms)); id++ {
		want = append(want, id)
	}
	if !slices.Equal(got, want) {
		t.Errorf("scheduler stamps for IDs %v after the kernel refused the request for %d, want %v", got, refused, want)
	}
}

// TestTimestampAllocs: reading and writing batches with stamps, and
// reading the transmit stamps, allocates nothing.
func TestTimestampAllocs(t *testing.T) {
	p, c := stampedPair(t)
	ms := make([]Message, 4)
	for i := range ms {
		ms[i].Buf = make([]byte, 128)
	}
	st := make([]tstamp.TxStamp, 8)
	msg := make([]byte, 64)
	p.SetReadDeadline(time.Now().Add(10 * time.Second))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := c.SampleSched(2); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		c.Write(msg)
		c.WriteBatch(ms[:2]) // one of them asks for its scheduler stamp
		n, err := p.ReadBatch(ms)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteBatch(ms[:n]); err != nil {
			t.Fatal(err)
		}
		p.ReadTxStamps(st)
		c.ReadBatch(ms[:1])
		c.ReadTxStamps(st)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stamped round, want 0", allocs)
	}
}
