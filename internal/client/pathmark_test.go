package client

import (
	"reflect"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// TestPathRecorder: the first marks of each direction, every change as an
// event with its time and probe, CE marks counted apart from changes, and
// the hops (down's from an inferred initial TTL).
func TestPathRecorder(t *testing.T) {
	const ef0, ef1, ce = 46<<2 | 2, 46<<2 | 1, 46<<2 | 3
	var p pathRecorder
	ms := time.Millisecond
	p.see(pathUp, 63, ef0, 1*ms, 1)
	p.see(pathDown, 115, 0, 1*ms, 1)
	p.see(pathUp, 63, ce, 2*ms, 2) // congestion: counted, not a change
	p.see(pathUp, 63, ef0, 3*ms, 3)
	p.see(pathUp, 63, 46<<2, 4*ms, 4) // bleached
	p.see(pathUp, 63, 10<<2, 5*ms, 5) // remarked
	p.see(pathDown, 114, 0, 5*ms, 5)  // a hop more down
	p.see(pathUp, 63, 10<<2, 6*ms, 6)
	got := p.result(64, ef1)
	want := &result.Path{
		Sent: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT1},
		Up: result.PathDirection{Packets: 6, First: result.PathMark{TTL: 63, DSCP: 46, ECN: result.ECT0},
			Last: result.PathMark{TTL: 63, DSCP: 10}, InitialTTL: 64, Hops: 1, Changes: 2, CE: 1},
		Down: result.PathDirection{Packets: 2, First: result.PathMark{TTL: 115}, Last: result.PathMark{TTL: 114},
			InitialTTL: 128, InitialInferred: true, Hops: 13, Changes: 1},
		Events: []result.PathEvent{
			{At: 4 * ms, Seq: 4, Direction: "up", From: result.PathMark{TTL: 63, DSCP: 46, ECN: result.ECT0}, To: result.PathMark{TTL: 63, DSCP: 46}},
			{At: 5 * ms, Seq: 5, Direction: "up", From: result.PathMark{TTL: 63, DSCP: 46}, To: result.PathMark{TTL: 63, DSCP: 10}},
			{At: 5 * ms, Seq: 5, Direction: "down", From: result.PathMark{TTL: 115}, To: result.PathMark{TTL: 114}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("result(64, %#x) = %+v\nwant %+v", ef1, got, want)
	}
}

// TestPathRecorderBound: past result.MaxPathEvents changes, the events are
// counted, not kept; the changes are all counted.
func TestPathRecorderBound(t *testing.T) {
	var p pathRecorder
	const n = result.MaxPathEvents + 9
	for i := range n + 1 {
		p.see(pathDown, uint8(60+i%2), 0, time.Duration(i), uint64(i+1))
	}
	got := p.result(64, 0)
	if len(got.Events) != result.MaxPathEvents || got.EventsNotKept != n-result.MaxPathEvents || got.Down.Changes != n {
		t.Fatalf("%d events kept, %d not, %d changes; want %d, %d, %d", len(got.Events), got.EventsNotKept, got.Down.Changes,
			result.MaxPathEvents, n-result.MaxPathEvents, n)
	}
	if last := got.Events[len(got.Events)-1]; last.Seq != result.MaxPathEvents+1 {
		t.Fatalf("the last event kept is probe %d's, want the first %d changes' (probe %d)", last.Seq, result.MaxPathEvents, result.MaxPathEvents+1)
	}
	if got.Up.Packets != 0 || got.Up != (result.PathDirection{}) {
		t.Fatalf("up = %+v, want nothing: no probe said", got.Up)
	}
}

// TestPathRecorderEmpty: a recorder that heard nothing makes no result.
func TestPathRecorderEmpty(t *testing.T) {
	var p pathRecorder
	if got := p.result(64, 0); got != nil {
		t.Fatalf("result = %+v, want nil", got)
	}
}

// TestPathRecorderNoAlloc: recording a packet allocates nothing, changes
// and events included.
func TestPathRecorderNoAlloc(t *testing.T) {
	p := new(pathRecorder)
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		i++
		p.see(pathUp, uint8(60+i%3), uint8(i%4), time.Duration(i), uint64(i))
	})
	if allocs != 0 {
		t.Fatalf("see allocates %.1f times per packet, want none", allocs)
	}
}

// TestPathRecorderFirstCE: a first packet marked CE hides the ECN it was
// sent with; the next shows it, which is no change.
func TestPathRecorderFirstCE(t *testing.T) {
	var p pathRecorder
	p.see(pathUp, 64, 46<<2|3, 0, 1)
	p.see(pathUp, 64, 46<<2|2, 1, 2)
	got := p.result(64, 46<<2|2).Up
	if got.Changes != 0 || got.CE != 1 || got.Last != (result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT0}) {
		t.Fatalf("up = %+v; want 1 CE, no change, last ECT(0)", got)
	}
}

// TestSeePathOldReflector: a reflector from before FlagPath sends the
// probe's flags back with bytes 6 and 7 zero; the up direction takes
// nothing from such a reply (a TTL of 0 never arrives), and says why.
func TestSeePathOldReflector(t *testing.T) {
	r := &run{path: new(pathRecorder)}
	r.seq = 3
	for seq := uint64(1); seq <= 3; seq++ {
		r.seePath(&wire.Header{Type: wire.TypeReply, Flags: wire.FlagPath, Seq: seq}, transport.Path{TTL: 64, OK: true}, int64(seq))
	}
	got := r.path.result(64, 0)
	if got == nil || got.Up.Packets != 0 || got.Down.Packets != 3 || got.UpNote == "" {
		t.Fatalf("path %+v: want nothing up (and why), 3 replies down", got)
	}
}
