package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// TestPathLines: the path lines say, per direction, what was kept,
// remarked, bleached or CE-marked, the hops (down's from an inferred
// initial TTL), the changes as events, and why a direction is not known.
func TestPathLines(t *testing.T) {
	ef := result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT0}
	cases := []struct {
		name string
		path *result.Path
	}{
		{"kept on loopback", &result.Path{
			Sent: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT1},
			Up: result.PathDirection{Packets: 100, First: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT1},
				Last: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT1}, InitialTTL: 64},
			Down: result.PathDirection{Packets: 100, First: result.PathMark{TTL: 64}, Last: result.PathMark{TTL: 64},
				InitialTTL: 64, InitialInferred: true},
		}},
		{"remarked and bleached up, CE down, events", &result.Path{
			Sent: ef,
			Up: result.PathDirection{Packets: 1000, First: result.PathMark{TTL: 63, DSCP: 0, ECN: result.NotECT},
				Last: result.PathMark{TTL: 62, DSCP: 10, ECN: result.NotECT}, InitialTTL: 64, Hops: 1, Changes: 2},
			Down: result.PathDirection{Packets: 998, First: result.PathMark{TTL: 115, DSCP: 46, ECN: result.ECT0},
				Last: result.PathMark{TTL: 115, DSCP: 46, ECN: result.ECT0}, InitialTTL: 128, InitialInferred: true, Hops: 13, CE: 12},
			Events: []result.PathEvent{
				{At: 1200 * time.Millisecond, Seq: 1201, Direction: "up", From: result.PathMark{TTL: 63}, To: result.PathMark{TTL: 63, DSCP: 10}},
				{At: 2500 * time.Millisecond, Seq: 2480, Direction: "up", From: result.PathMark{TTL: 63, DSCP: 10}, To: result.PathMark{TTL: 62, DSCP: 10}},
			},
			EventsNotKept: 3,
		}},
		{"CE up is not a rewrite", &result.Path{
			Sent: ef,
			Up: result.PathDirection{Packets: 10, First: result.PathMark{TTL: 64, DSCP: 46, ECN: result.CE},
				Last: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT0}, InitialTTL: 64, CE: 1},
			DownNote: "the client reads its replies one at a time",
		}},
		{"up not known, ECN rewritten down", &result.Path{
			UpNote: "the reflector did not say",
			Down: result.PathDirection{Packets: 5, First: result.PathMark{TTL: 250, DSCP: 1, ECN: result.ECT1},
				Last: result.PathMark{TTL: 250, DSCP: 1, ECN: result.ECT1}, InitialTTL: 255, InitialInferred: true, Hops: 5, Changes: 1},
			Events: []result.PathEvent{{At: time.Second, Seq: 3, Direction: "down", From: result.PathMark{TTL: 250, DSCP: 1, ECN: result.ECT0}, To: result.PathMark{TTL: 250, DSCP: 1, ECN: result.ECT1}}},
		}},
	}
	var b strings.Builder
	for _, c := range cases {
		b.WriteString("# " + c.name + "\n")
		writePath(&b, c.path)
	}
	writePath(&b, nil) // writes nothing
	golden(t, "path.txt", []byte(b.String()))
}

// pathFixtures are fixture() with a path: one whose directions are both
// known, with events, and one that says why neither is.
func pathFixtures() map[string]*result.Result {
	known := fixture()
	known.Path = &result.Path{
		Sent: result.PathMark{TTL: 64, DSCP: 46, ECN: result.ECT0},
		Up: result.PathDirection{Packets: 1000, First: result.PathMark{TTL: 63}, Last: result.PathMark{TTL: 62, DSCP: 10},
			InitialTTL: 64, Hops: 1, Changes: 2},
		Down: result.PathDirection{Packets: 998, First: result.PathMark{TTL: 115, DSCP: 46, ECN: result.ECT0},
			Last: result.PathMark{TTL: 115, DSCP: 46, ECN: result.ECT0}, InitialTTL: 128, InitialInferred: true, Hops: 13, CE: 12},
		Events: []result.PathEvent{
			{At: 1200 * time.Millisecond, Seq: 1201, Direction: "up", From: result.PathMark{TTL: 63}, To: result.PathMark{TTL: 63, DSCP: 10}},
			{At: 2500 * time.Millisecond, Seq: 2480, Direction: "up", From: result.PathMark{TTL: 63, DSCP: 10}, To: result.PathMark{TTL: 62, DSCP: 10}},
		},
		EventsNotKept: 3,
	}
	unknown := fixture()
	unknown.Path = &result.Path{UpNote: "the reflector did not say", DownNote: "the client reads its replies one at a time"}
	return map[string]*result.Result{"path.json": known, "path-unknown.json": unknown}
}

// TestGoldenPath: the path's JSON (see docs/result.schema.json).
func TestGoldenPath(t *testing.T) {
	for name, res := range pathFixtures() {
		var b bytes.Buffer
		if err := WriteJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.Bytes())
	}
}
