package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/ifstats"
	"github.com/volley-net/volley/internal/stats"
)

// reflectorFixture returns a second of a reflector's counters with
// something in every field its lines show.
func reflectorFixture() ReflectorCounts {
	resp, kern := stats.NewDist(), stats.NewDist()
	for i := range int64(1000) {
		resp.Record(20_000 + 37*i)
		kern.Record(15_000 + 29*i)
	}
	return ReflectorCounts{Elapsed: time.Second, PacketsIn: 1000, PacketsOut: 990, BytesIn: 1000 * 64, BytesOut: 990 * 1400,
		SendErrors: 2, Duplicates: 3, Sessions: 2, SessionsOpened: 1,
		Drops:    []Drop{{"short", 0}, {"magic", 4}, {"rate", 6}},
		Response: resp, ResponseKernel: kern}
}

// TestGoldenReflector: a server's interval lines (busy, then idle for a
// minute and more, with an interface's counters), its totals and a
// one-way line.
func TestGoldenReflector(t *testing.T) {
	var b bytes.Buffer
	nic := ifstats.Counters{RXPackets: 5000, TXPackets: 4000, RXDropped: 1}
	iv := NewReflectorIntervals(&b, "eth0", nic)
	busy := reflectorFixture()
	step := func(c ReflectorCounts, rx, tx, dropped uint64) {
		t.Helper()
		nic.RXPackets += rx
		nic.TXPackets += tx
		nic.RXDropped += dropped
		if err := iv.Interval(c, nic, true); err != nil {
			t.Fatal(err)
		}
	}
	step(busy, 1010, 995, 0)
	step(busy, 1000, 990, 2)
	quiet := ReflectorCounts{Elapsed: time.Second, Sessions: 2}
	for range 61 {
		step(quiet, 3, 1, 0)
	}
	busy.ResponseKernel = nil
	step(busy, 1000, 990, 0)
	noNIC := NewReflectorIntervals(&b, "", ifstats.Counters{})
	if err := noNIC.Interval(ReflectorCounts{Elapsed: 500 * time.Millisecond, PacketsIn: 1}, ifstats.Counters{}, false); err != nil {
		t.Fatal(err)
	}
	b.WriteString(OneWayLine("192.0.2.1:40000", 998, 2, 31*time.Microsecond, 45*time.Microsecond, 2*time.Millisecond) + "\n")
	total := reflectorFixture()
	total.Elapsed = 65 * time.Second
	if err := WriteReflectorTotals(&b, total); err != nil {
		t.Fatal(err)
	}
	if err := WriteReflectorTotals(&b, ReflectorCounts{Elapsed: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	golden(t, "reflector.txt", b.Bytes())
}
