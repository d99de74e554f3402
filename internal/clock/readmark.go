package clock

// ReadMark notes, by a reader's clock, when the reader's last read that
// got bytes returned: for reads that time what they bring as the system
// call returns, before the way back to their caller (the transports'
// SetReadClock). Its zero value has no clock, and notes nothing. One
// reader's: not for concurrent use.
type ReadMark struct {
	now func() int64
	at  int64
}

// SetClock makes now the clock (nil: none).
func (m *ReadMark) SetClock(now func() int64) { m.now = now }

// Clock returns the clock SetClock gave, or nil.
func (m *ReadMark) Clock() func() int64 { return m.now }

// Got notes the clock's reading now, when a read got n > 0 bytes.
func (m *ReadMark) Got(n int) {
	if n > 0 && m.now != nil {
		m.at = m.now()
	}
}

// At returns the reading of the last Got that noted one (0: none).
func (m *ReadMark) At() int64 { return m.at }
