package cli

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/load"
)

func TestBitRate(t *testing.T) {
	for _, tt := range []struct {
		in, back string
		want     float64
	}{{"0", "0", 0}, {"100M", "100M", 100e6}, {"1G", "1G", 1e9}, {"2.5g", "2.5G", 2.5e9}, {"800K", "800k", 800e3}, {"8k", "8k", 8e3}, {"1000G", "1000G", 1e12}} {
		var r bitRate
		if err := r.Set(tt.in); err != nil || float64(r) != tt.want {
			t.Errorf("Set(%q) = %v, %v; want %v", tt.in, float64(r), err, tt.want)
		}
		if got := r.String(); got != tt.back {
			t.Errorf("Set(%q).String() = %q, want %q", tt.in, got, tt.back)
		}
	}
}

// TestLoadLines: the load server's interval line says what happened in
// the interval (none when nothing did), its totals line what happened in
// all; without a load server, no lines.
func TestLoadLines(t *testing.T) {
	srv := load.NewServer(load.ServerConfig{MaxStreams: 1})
	l := loadLines{srv: srv}
	if got := l.interval(time.Second); got != "" {
		t.Fatalf("interval with nothing done = %q, want none", got)
	}
	cc, sc := net.Pipe()
	defer cc.Close()
	g, err := srv.Grant(netip.MustParseAddrPort("192.0.2.1:1"), load.Up, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Grant(netip.MustParseAddrPort("192.0.2.2:1"), load.Up, time.Minute); err == nil {
		t.Fatal("a second stream beyond MaxStreams 1 was granted")
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(sc) }()
	if _, err := cc.Write(make([]byte, 125_000)); err != nil {
		t.Fatal(err)
	}
	cc.Close()
	<-served // nil, or a pipe's error for the deadline set after the close: the counts are the test's
	want := "load: streams 0, served 1, refused 1, sent 0bit/s, received 500kbit/s\n"
	if got := l.interval(2 * time.Second); got != want {
		t.Errorf("interval = %q, want %q", got, want)
	}
	if got := l.interval(time.Second); got != "" {
		t.Errorf("the next interval, with nothing done = %q, want none", got)
	}
	want = "--- load totals: streams served 1, refused 1, sent 0B, received 125kB\n"
	if got := l.totals(); got != want {
		t.Errorf("totals = %q, want %q", got, want)
	}
	var off loadLines
	if got := off.interval(time.Second) + off.totals(); got != "" {
		t.Errorf("lines without a load server = %q, want none", got)
	}
}
