package client

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/clock"
)

// deadlines records the write deadlines set on it.
type deadlines struct{ set []time.Time }

func (d *deadlines) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// TestProbeDeadline: a probe's write deadline is the silence time away,
// no later than the grace after the end of sending or the end a signal
// set; a probe that would start past those is refused as past the end,
// its deadline not set, rather than written to fail at once and be taken
// for the reflector's stall.
func TestProbeDeadline(t *testing.T) {
	const s = int64(time.Second)
	clk := clock.NewFake(0)
	var endBy atomic.Int64
	for _, tt := range []struct {
		name            string
		now, until, end int64 // until: the end of sending (0: none); end: a signal's (0: none)
		want            int64 // the deadline set (0: none)
		wantErr         error
	}{
		{"silence", 10 * s, 0, 0, 13 * s, nil},
		{"end of sending", 10 * s, 11 * s, 0, 12 * s, nil},
		{"a signal", 10 * s, 11 * s, 10*s + 500, 10*s + 500, nil},
		{"past the end of sending", 12 * s, 11 * s, 0, 0, errPastEnd},
		{"past a signal's end", 10 * s, 0, 10 * s, 0, errPastEnd},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &deadlines{}
			endBy.Store(tt.end)
			g := &writeGuard{conn: d, clk: clk, limit: 3 * s, grace: s, endBy: &endBy}
			err := g.probe(tt.now, tt.until)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("probe: %v, want %v", err, tt.wantErr)
			}
			switch {
			case tt.want == 0 && len(d.set) != 0:
				t.Errorf("deadlines set %v, want none", d.set)
			case tt.want != 0 && (len(d.set) != 1 || !d.set[0].Equal(clk.Time(tt.want))):
				t.Errorf("deadlines set %v, want %v", d.set, clk.Time(tt.want))
			}
		})
	}
}
