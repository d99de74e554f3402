package cli

import (
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/reflector"
)

func TestStampAddr(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"862", ":862", ""},
		{"0", ":0", ""},
		{"127.0.0.1:0", "127.0.0.1:0", ""},
		{"[::1]:862", "[::1]:862", ""},
		{"70000", "", "--stamp 70000: bad port"},
		{"127.0.0.1:", "", "--stamp 127.0.0.1:: bad port"},
		{"::1", "", "--stamp ::1: want [ADDR:]PORT"},
	} {
		got, err := stampAddr(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("stampAddr(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestStampLine(t *testing.T) {
	var c reflector.Counters
	c.PacketsIn, c.PacketsOut, c.Sessions = 120, 100, 2
	c.Drops[reflector.DropAuth], c.Drops[reflector.DropRate] = 15, 5
	want := "in 120, answered 100, dropped 20 (rate 5, auth 15), sessions 2"
	if got := stampLine(c); got != want {
		t.Errorf("stampLine = %q, want %q", got, want)
	}
}
