package client

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/testconn"
)

// idClock is the system clock (synctest's, in a bubble) with an identity.
type idClock struct{ id uint64 }

func (c idClock) Now() int64              { return time.Now().UnixNano() }
func (c idClock) Time(ns int64) time.Time { return time.Unix(0, ns) }
func (c idClock) Identity() uint64        { return c.id }

// shiftedClock is the system clock moved by d.
type shiftedClock struct {
	d time.Duration
}

func (c shiftedClock) Now() int64              { return time.Now().UnixNano() + int64(c.d) }
func (c shiftedClock) Time(ns int64) time.Time { return time.Unix(0, ns-int64(c.d)) }

// TestClock: the offset between the client's clock and the reflector's,
// and the one-way delays it gives.
func TestClock(t *testing.T) {
	cases := []runCase{{
		// When the reflector's Cookie says it reads the client's clock,
		// the offset is 0 and the one-way delays are measured, however
		// asymmetric the path (100µs up, 300µs down): not taken for an
		// offset of -100µs as the estimate would.
		name:  "same clock",
		refl:  testconn.Reflector{Clock: idClock{7}},
		delay: 300 * time.Microsecond,
		path: func(_ *testing.T, c *testconn.Conn) {
			c.DelayUpOf = func(uint64) time.Duration { return 100 * time.Microsecond }
		},
		cfg: Config{Count: 100, Clock: idClock{7}},
		check: func(t *testing.T, r ran) {
			co := r.res.ClockOffset
			if co == nil || co.Method != "same-clock" || co.Offset != 0 || co.EstimatedUp != nil || co.Drift == nil || co.Drift.PPM != 0 {
				t.Fatalf("clock offset = %+v, want same-clock, offset 0, drift 0, no estimated delays", co)
			}
			if up, down := r.res.Summary.Up, r.res.Summary.Down; up.Min != 100*time.Microsecond || down.Min != 300*time.Microsecond {
				t.Fatalf("up min %v, down min %v, want the path's 100µs and 300µs", up.Min, down.Min)
			}
		},
	}}
	// A reflector whose clock is off the client's (by a second either
	// way, or not at all but without saying so) is estimated, labelled as
	// such with its assumption, and its bound holds the true offset and
	// the true one-way delays, symmetric or not. An asymmetric path is
	// taken for an offset of half its asymmetry: the assumption.
	const down = 100 * time.Microsecond
	for _, tt := range []struct {
		shift, up time.Duration
	}{
		{time.Second, down},
		{-1234567 * time.Microsecond, 150 * time.Microsecond},
		{0, 300 * time.Microsecond},
		{time.Second, 20 * time.Microsecond},
	} {
		cases = append(cases, runCase{
			name:  fmt.Sprintf("estimate shift %v up %v", tt.shift, tt.up),
			refl:  testconn.Reflector{Clock: shiftedClock{tt.shift}},
			delay: down,
			path: func(_ *testing.T, c *testconn.Conn) {
				c.Shift = tt.shift
				c.DelayUpOf = func(seq uint64) time.Duration { return tt.up + time.Duration(seq%7)*time.Microsecond }
			},
			cfg: Config{Count: 200, Clock: shiftedClock{}},
			check: func(t *testing.T, r ran) {
				co := r.res.ClockOffset
				if co == nil || co.Method != "estimate" || !strings.Contains(co.Assumes, "symmetric minimum delays") {
					t.Fatalf("clock offset = %+v, want an estimate that says what it assumes", co)
				}
				if want := tt.shift + (tt.up-down)/2; co.Offset != want {
					t.Errorf("offset = %v, want %v: the shift %v and half the asymmetry", co.Offset, want, tt.shift)
				}
				if d := (co.Offset - tt.shift).Abs(); d > co.Bound {
					t.Errorf("offset %v for a shift of %v: off by %v, want within the bound %v", co.Offset, tt.shift, d, co.Bound)
				}
				if up := co.EstimatedUp.Min; (up - tt.up).Abs() > co.Bound {
					t.Errorf("estimated up min = %v, want %v within %v", up, tt.up, co.Bound)
				}
				if dn := co.EstimatedDown.Max; (dn - down).Abs() > co.Bound {
					t.Errorf("estimated down max = %v, want %v within %v", dn, down, co.Bound)
				}
				if len(co.Warnings) != 0 || co.Drift != nil {
					t.Errorf("warnings %v, drift %+v for a steady shift over a short run, want none", co.Warnings, co.Drift)
				}
			},
		})
	}
	runCases(t, cases)
}

// seriesStart is when series start.
const seriesStart = int64(1_700_000_000e9)

// series feeds est a synthetic run of secs seconds at rate replies/s over
// a path of 1ms up and 3ms down with exponential queueing on top (mean
// 200µs, and one reply in 20 stuck for up to 50ms), between clocks whose
// offset starts at offset and drifts by ppm.
func series(est *offsetEst, secs, rate int, offset time.Duration, ppm float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	queue := func() int64 {
		q := rng.ExpFloat64() * 200e3
		if rng.IntN(20) == 0 {
			q += rng.Float64() * 50e6
		}
		return int64(q)
	}
	for i := range secs * rate {
		t1 := seriesStart + int64(i)*int64(time.Second)/int64(rate)
		theta := int64(offset) + int64(ppm*float64(t1-seriesStart)/1e6)
		u, d := int64(time.Millisecond)+queue(), 3*int64(time.Millisecond)+queue()
		est.add(t1+u+d, u+theta, d-theta)
	}
}

// TestClockDrift: the drift of one clock is 0 within its stated error,
// that of two clocks apart by 20ppm is found within its error; a short
// run reports none; a day of replies keeps at most maxOffsetWindows
// windows.
func TestClockDrift(t *testing.T) {
	for _, tt := range []struct {
		name      string
		secs      int
		ppm       float64
		offset    time.Duration
		wantDrift bool
	}{
		{"one clock", 30, 0, 0, true},
		{"one clock, long", 3600, 0, 0, true},
		{"20ppm", 60, 20, 5 * time.Millisecond, true},
		{"-3ppm, a day", 86400, -3, -time.Second, true},
		{"too short", 4, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(5) {
				var est offsetEst
				series(&est, tt.secs, 20, tt.offset, tt.ppm, seed)
				if n := len(est.windows()); n > maxOffsetWindows {
					t.Fatalf("windows kept = %d, want at most %d", n, maxOffsetWindows)
				}
				co := clockOffset(&est, false, result.Latency{}, result.Latency{})
				if !tt.wantDrift {
					if co.Drift != nil {
						t.Fatalf("drift = %+v from %ds, want none reported", *co.Drift, tt.secs)
					}
					continue
				}
				d := co.Drift
				if d == nil {
					t.Fatalf("drift = nil from %ds of replies, want one", tt.secs)
				}
				if math.Abs(d.PPM-tt.ppm) > d.ErrorPPM || d.ErrorPPM > 5 {
					t.Fatalf("seed %d: drift = %+.3f ± %.3f ppm, want %+.1f within its error (and an error below 5ppm)", seed, d.PPM, d.ErrorPPM, tt.ppm)
				}
				// The asymmetry (1ms up, 3ms down) is what the
				// estimate takes for -1ms of offset: the offset at the
				// middle of the run, within its bound of the truth.
				ws := est.windows()
				ref := (ws[0].mid() + ws[len(ws)-1].mid()) / 2
				mid := tt.offset + time.Duration(tt.ppm*float64(ref-seriesStart)/1e6)
				if got := (co.Offset - mid).Abs(); got > co.Bound {
					t.Fatalf("seed %d: offset = %v ± %v, want the truth %v mid-run within the bound", seed, co.Offset, co.Bound, mid)
				}
			}
		})
	}
}
