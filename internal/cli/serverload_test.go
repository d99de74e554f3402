package cli

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/load"
)

// TestLoadServerFlags: --max-load-rate's bad values, and the flag without
// --allow-load, are usage errors naming the flag and what it takes.
func TestLoadServerFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--allow-load", "--max-load-rate", "fast"}, []string{`"fast"`, "--max-load-rate", "bits/s", "100M or 1G"}},
		{[]string{"--allow-load", "--max-load-rate", "-1G"}, []string{`"-1G"`, "--max-load-rate", "0 or more"}},
		{[]string{"--allow-load", "--max-load-rate", "1T"}, []string{`"1T"`, "--max-load-rate", "k, M or G"}},
		{[]string{"--allow-load", "--max-load-rate", "1e20"}, []string{`"1e20"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}},
		{[]string{"--allow-load", "--max-load-rate", "0.0000001"}, []string{`"0.0000001"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}},
		{[]string{"--allow-load", "--max-load-rate", "7999"}, []string{`"7999"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}},
		{[]string{"--max-load-rate", "100M"}, []string{"--max-load-rate 100M", "without --allow-load"}},
		{[]string{"--max-load-rate", "2.5G"}, []string{"--max-load-rate 2.5G", "without --allow-load"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, append([]string{"server", "--listen", "127.0.0.1:0"}, tt.args...), &stdout, &stderr)
			msg := stderr.String()
			rest, ok := msg, true
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					ok = false
					break
				}
				rest = rest[i+len(w):]
			}
			if code != ExitUsage || !ok || strings.Count(msg, "\n") != 1 || stdout.Len() != 0 {
				t.Fatalf("server %q = %d, stdout %q, stderr %q; want %d and one line with %q in order",
					tt.args, code, stdout.String(), msg, ExitUsage, tt.want)
			}
		})
	}
}

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
