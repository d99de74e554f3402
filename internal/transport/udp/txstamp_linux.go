package udp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volley-net/volley/internal/tstamp"
)

// txStamps is the batcher's part for kernel stamps (enableStamps):
// receive stamps in each read's control messages, transmit stamps from the
// socket's error queue, which the sends count for their IDs.
type txStamps struct {
	stamping bool
	path     bool                        // reads want each datagram's TTL and traffic class (path_linux.go)
	rctl     [][tstamp.RxControlLen]byte // made when stamping or path is on
	ehdrs    []unix.Mmsghdr
	ectl     [][tstamp.TxControlLen]byte
	en       int
	eerr     error
	errFn    func(fd uintptr) // made once: a call does not allocate
	txSent   atomic.Uint32
	hw       bool // the NIC's stamps too
	// sched: the kernel gives the socket scheduler stamps. With
	// schedEvery above 1 (sampleSched), the socket no longer asks for
	// them itself: a datagram whose ID is a multiple of schedEvery asks,
	// through the control message in sctl.
	sched      bool
	schedEvery uint32
	sctl       []byte // MaxBatch requests of tstamp.SchedRequestLen bytes
	sctlLen    int
}

func (b *batcher) enableStamps(hw, sched bool) error {
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		if sched {
			b.sched, serr = tstamp.EnableSched(int(fd), hw)
		} else {
			serr = tstamp.Enable(int(fd), hw)
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	b.hw = hw
	b.unsample() // the socket asks for every datagram's again
	if !b.stamping {
		b.allocControl()
		b.ehdrs = make([]unix.Mmsghdr, MaxBatch)
		b.ectl = make([][tstamp.TxControlLen]byte, MaxBatch)
		b.errFn = func(fd uintptr) { b.recvErrQueue(fd) }
		b.stamping = true
		b.txSent.Store(0) // the kernel counts from 0 once OPT_ID is first set
	}
	return nil
}

// sampleSched has one datagram in every sent in batches ask for its
// scheduler stamp (Conn.SampleSched).
func (b *batcher) sampleSched(every uint32) error {
	if !b.stamping || !b.sched || every <= 1 || b.schedEvery == every {
		return nil
	}
	var serr error
	if err := b.rc.Control(func(fd uintptr) { serr = tstamp.Enable(int(fd), b.hw) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	b.sctlLen = tstamp.SchedRequestLen()
	b.sctl = make([]byte, MaxBatch*b.sctlLen)
	for i := range MaxBatch {
		tstamp.PutSchedRequest(b.sctl[i*b.sctlLen:], b.hw)
	}
	b.schedEvery = every
	return nil
}

func (b *batcher) schedSampled() uint32 {
	switch {
	case !b.stamping || !b.sched:
		return 0
	case b.schedEvery > 1:
		return b.schedEvery
	}
	return 1
}

// unsample has no datagram ask for its scheduler stamp through a
// control message any more.
func (b *batcher) unsample() {
	if b.schedEvery <= 1 {
		return
	}
	for i := range b.whdrs {
		b.whdrs[i].Hdr.Control = nil
		b.whdrs[i].Hdr.SetControllen(0)
	}
	b.schedEvery = 0
}

// askSched sets the control messages of the n datagrams about to be sent
// (their IDs from id on): the scheduler-stamp request where sampleSched
// picks them, none elsewhere.
func (b *batcher) askSched(id uint32, n int) {
	if b.schedEvery <= 1 {
		return
	}
	for i := range n {
		h := &b.whdrs[i].Hdr
		if (id+uint32(i))%b.schedEvery == 0 {
			h.Control = &b.sctl[i*b.sctlLen]
			h.SetControllen(b.sctlLen)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
	}
}

// refusedSched handles a batch's send error err: a kernel that refuses
// the per-datagram request (EINVAL: before Linux 4.7) has the socket ask
// for every datagram's scheduler stamp again, as before sampleSched, and
// the batch is sent again (true).
func (b *batcher) refusedSched(err error) bool {
	if b.schedEvery <= 1 || err != unix.EINVAL {
		return false
	}
	b.unsample()
	var serr error
	if cerr := b.rc.Control(func(fd uintptr) { b.sched, serr = tstamp.EnableSched(int(fd), b.hw) }); cerr != nil || serr != nil {
		return false
	}
	return true
}

func (b *batcher) nextTxID() uint32 {
	if b == nil {
		return 0
	}
	return b.txSent.Load()
}

// recvErrQueue reads error-queue entries; it never waits, so the call is
// raw: the scheduler need not hear of it (for a spinning socket, a
// watched call is one the runtime's monitor may take its processor in,
// as with sends: see busyPoll).
func (b *batcher) recvErrQueue(fd uintptr) bool {
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.ehdrs[0])), uintptr(b.en), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		b.en, b.eerr = int(n), nil
	case unix.EINTR:
		return b.recvErrQueue(fd)
	case unix.EAGAIN:
		b.en, b.eerr = 0, nil
	default:
		b.en, b.eerr = 0, errno
	}
	return true
}

func (b *batcher) readTxStamps(st []tstamp.TxStamp) (int, error) {
	if b == nil || !b.stamping {
		return 0, nil
	}
	got := 0
	for got < len(st) {
		n := min(len(st)-got, MaxBatch)
		for i := range n {
			h := &b.ehdrs[i].Hdr
			h.Control = &b.ectl[i][0]
			h.SetControllen(tstamp.TxControlLen)
			h.Flags = 0
		}
		b.en = n
		if err := b.viaControl(b.errFn); err != nil {
			return got, err
		}
		if b.eerr != nil {
			return got, wrapErrno("recvmmsg errqueue", b.eerr)
		}
		for i := range b.en {
			if s, ok := tstamp.ParseTx(b.ectl[i][:b.ehdrs[i].Hdr.Controllen]); ok {
				st[got] = s
				got++
			}
		}
		if b.en < n {
			break // the queue is empty
		}
	}
	return got, nil
}

// countSent counts a datagram sent around the batcher, for the IDs of
// transmit stamps.
func (p *PacketConn) countSent() {
	if p.b != nil {
		p.b.txSent.Add(1)
	}
}
