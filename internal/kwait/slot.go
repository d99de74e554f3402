package kwait

import (
	"sync/atomic"
	"syscall"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// Slot is what a connection keeps for calls that wait in the kernel: the
// Conn while they are on (nil: the poller waits), and the deadlines set,
// which such calls keep themselves (the poller's timers do not end them).
// Its zero value is off. A connection's Close calls Closing first.
type Slot struct {
	c                    atomic.Pointer[Conn]
	closed               atomic.Bool // Closing was called: a Conn Set makes after is closing too
	rdeadline, wdeadline atomic.Int64
	readClock            func() int64 // SetReadClock's, for each Conn
}

// SetReadClock gives the Conn, now and after each Set, its read clock
// (Conn.SetReadClock). Call it on the reader's goroutine.
func (s *Slot) SetReadClock(now func() int64) {
	s.readClock = now
	if c := s.c.Load(); c != nil {
		c.SetReadClock(now)
	}
}

// Conn is the connection's Conn while calls wait in the kernel, or nil.
func (s *Slot) Conn() *Conn { return s.c.Load() }

// Set turns waiting in the kernel on for rc's socket (NewConn) or off
// (Rejoin).
func (s *Slot) Set(rc syscall.RawConn, on bool) error {
	if !on {
		if c := s.c.Swap(nil); c != nil {
			return c.Rejoin()
		}
		return nil
	}
	if s.c.Load() != nil {
		return nil
	}
	c, err := NewConn(rc, &s.rdeadline, &s.wdeadline)
	if err != nil {
		return err
	}
	c.SetReadClock(s.readClock)
	s.c.Store(c)
	if s.closed.Load() {
		// Closing looked before the store: this Conn must not outlive
		// the connection on its copy of the descriptor.
		c.Closing()
	}
	return nil
}

// SetReadDeadline records t for reads, and wakes a read waiting in the
// kernel for a deadline already past (an interrupt).
func (s *Slot) SetReadDeadline(t time.Time) {
	s.rdeadline.Store(clock.Deadline(t))
	if c := s.c.Load(); c != nil && !t.IsZero() && !t.After(time.Now()) {
		c.Wake()
	}
}

// SetWriteDeadline records t for writes.
func (s *Slot) SetWriteDeadline(t time.Time) { s.wdeadline.Store(clock.Deadline(t)) }

// Closing tells a call waiting in the kernel that the connection is
// closing (see Conn.Closing).
func (s *Slot) Closing() {
	s.closed.Store(true)
	if c := s.c.Load(); c != nil {
		c.Closing()
	}
}
