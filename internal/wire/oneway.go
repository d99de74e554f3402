package wire

import (
	"encoding/binary"
	"errors"
	"math"
)

// The one-way results block: see the package comment for its layout.
const (
	// OneWayMagic starts a one-way results block: the bytes "OW". The
	// JSON form of reflectors before it started with '{', so neither end
	// takes the other's form for its own.
	OneWayMagic uint16 = 0x4F57
	// OneWayVersion is the version of the block's layout.
	OneWayVersion uint8 = 1
	// OneWayFixedLen is the length of the block before its distributions.
	OneWayFixedLen = 32
	// SnapshotFixedLen is the length of a distribution before its
	// histogram.
	SnapshotFixedLen = 44
)

// The block's flags: oneWayIPDV says the IPDV distribution follows the
// delays'; oneWayBelow that each distribution ends with a second length
// and histogram, of its values below zero.
const (
	oneWayIPDV  = 1 << 0
	oneWayBelow = 1 << 1
)

// ErrLength says the lengths a one-way results block gives disagree with
// each other (decoding), or cannot be written in their fields (encoding).
var ErrLength = errors.New("wire: bad length")

// Snapshot is a distribution of nanosecond values as it crosses the
// network: the exact count, mean, sum of squared deviations (M2) and
// extremes, and an HDR histogram in its standard V2 compressed encoding
// as base64 text, which wire carries without reading it: Histogram of the
// values from zero up, Below of the magnitudes of those below zero (one-way
// delays between two clocks), nil when there are none. It has the fields of
// stats.Snapshot, in the same order, so that each converts to the other;
// package stats makes it and checks what comes.
type Snapshot struct {
	Count     int64
	Mean      float64
	M2        float64
	Min       int64
	Max       int64
	Histogram []byte
	Below     []byte
}

// len returns the length of s's encoding, with Below's length and bytes
// when below.
func (s *Snapshot) len(below bool) int {
	if below {
		return SnapshotFixedLen + len(s.Histogram) + 4 + len(s.Below)
	}
	return SnapshotFixedLen + len(s.Histogram)
}

// put writes s into b, which holds s.len(below) bytes, and returns the
// rest of b.
func (s *Snapshot) put(b []byte, below bool) []byte {
	binary.BigEndian.PutUint64(b[0:], uint64(s.Count))
	binary.BigEndian.PutUint64(b[8:], math.Float64bits(s.Mean))
	binary.BigEndian.PutUint64(b[16:], math.Float64bits(s.M2))
	binary.BigEndian.PutUint64(b[24:], uint64(s.Min))
	binary.BigEndian.PutUint64(b[32:], uint64(s.Max))
	binary.BigEndian.PutUint32(b[40:], uint32(len(s.Histogram)))
	n := copy(b[SnapshotFixedLen:], s.Histogram)
	b = b[SnapshotFixedLen+n:]
	if !below {
		return b
	}
	binary.BigEndian.PutUint32(b, uint32(len(s.Below)))
	n = copy(b[4:], s.Below)
	return b[4+n:]
}

// decode reads a distribution from the start of b, with its histogram
// below zero when below, and returns the rest of b; its histograms are b's
// memory.
func (s *Snapshot) decode(b []byte, below bool) ([]byte, error) {
	if len(b) < SnapshotFixedLen {
		return b, ErrLength
	}
	n := binary.BigEndian.Uint32(b[40:])
	if uint64(n) > uint64(len(b)-SnapshotFixedLen) {
		return b, ErrLength
	}
	end := SnapshotFixedLen + int(n)
	*s = Snapshot{
		Count:     int64(binary.BigEndian.Uint64(b[0:])),
		Mean:      math.Float64frombits(binary.BigEndian.Uint64(b[8:])),
		M2:        math.Float64frombits(binary.BigEndian.Uint64(b[16:])),
		Min:       int64(binary.BigEndian.Uint64(b[24:])),
		Max:       int64(binary.BigEndian.Uint64(b[32:])),
		Histogram: b[SnapshotFixedLen:end:end],
	}
	b = b[end:]
	if !below {
		return b, nil
	}
	if len(b) < 4 {
		return b, ErrLength
	}
	n = binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return b, ErrLength
	}
	end = 4 + int(n)
	s.Below = b[4:end:end]
	return b[end:], nil
}

// OneWayResults is the payload of the CloseAck of a session that sent
// one-way probes, after the header (see the package comment for its
// layout). Delay is the distribution of the one-way delays in
// nanoseconds, and IPDV that of the differences between the delays of
// consecutive probes (as absolute values), when HasIPDV says it is there:
// a reflector leaves it out when the CloseAck has no room for it.
type OneWayResults struct {
	Received   uint64 // measured probes the reflector received, once each
	Duplicates uint64 // copies of probes it had received
	Reordered  uint64 // probes that came after one with a higher sequence number
	Delay      Snapshot
	IPDV       Snapshot
	HasIPDV    bool
}

// Len returns the length of r's encoding.
func (r *OneWayResults) Len() int {
	below := r.below()
	n := OneWayFixedLen + r.Delay.len(below)
	if r.HasIPDV {
		n += r.IPDV.len(below)
	}
	return n
}

// below reports whether r's distributions carry histograms below zero:
// whenever one of them has values there.
func (r *OneWayResults) below() bool {
	return len(r.Delay.Below) > 0 || (r.HasIPDV && len(r.IPDV.Below) > 0)
}

// AppendBinary appends r's encoding to b. It fails with ErrLength only
// when a histogram, or the whole, is too long for its length field (4 GiB).
func (r *OneWayResults) AppendBinary(b []byte) ([]byte, error) {
	n := r.Len()
	if uint64(n) > math.MaxUint32 {
		return b, ErrLength
	}
	var flags byte
	if r.HasIPDV {
		flags |= oneWayIPDV
	}
	below := r.below()
	if below {
		flags |= oneWayBelow
	}
	start := len(b)
	b = append(b, make([]byte, n)...)
	p := b[start:]
	binary.BigEndian.PutUint16(p[0:], OneWayMagic)
	p[2] = OneWayVersion
	p[3] = flags
	binary.BigEndian.PutUint32(p[4:], uint32(n))
	binary.BigEndian.PutUint64(p[8:], r.Received)
	binary.BigEndian.PutUint64(p[16:], r.Duplicates)
	binary.BigEndian.PutUint64(p[24:], r.Reordered)
	p = r.Delay.put(p[OneWayFixedLen:], below)
	if r.HasIPDV {
		r.IPDV.put(p, below)
	}
	return b, nil
}

// Decode reads a one-way results block from the start of p (a CloseAck's
// bytes between its header and its tag); bytes after the block's length
// are ignored. It checks the length, magic and version, in that order
// (ErrShort, ErrMagic, ErrVersion), then that the lengths agree
// (ErrLength), and leaves r as it was on an error. The histograms are p's
// memory, not copies: Decode never allocates, and never panics.
func (r *OneWayResults) Decode(p []byte) error {
	if len(p) < OneWayFixedLen {
		return ErrShort
	}
	if binary.BigEndian.Uint16(p[0:]) != OneWayMagic {
		return ErrMagic
	}
	if p[2] != OneWayVersion {
		return ErrVersion
	}
	n := binary.BigEndian.Uint32(p[4:])
	if uint64(n) > uint64(len(p)) {
		return ErrShort
	}
	if n < OneWayFixedLen {
		return ErrLength
	}
	res := OneWayResults{
		Received:   binary.BigEndian.Uint64(p[8:]),
		Duplicates: binary.BigEndian.Uint64(p[16:]),
		Reordered:  binary.BigEndian.Uint64(p[24:]),
		HasIPDV:    p[3]&oneWayIPDV != 0,
	}
	below := p[3]&oneWayBelow != 0
	rest, err := res.Delay.decode(p[OneWayFixedLen:n], below)
	if err != nil {
		return err
	}
	if res.HasIPDV {
		if rest, err = res.IPDV.decode(rest, below); err != nil {
			return err
		}
	}
	// Bytes left over, or a flag for histograms below zero that are all
	// empty: an encoding AppendBinary never writes.
	if len(rest) != 0 || below != res.below() {
		return ErrLength
	}
	*r = res
	return nil
}
