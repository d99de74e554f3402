package cli

import (
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/sockopt"
)

// TestApplyECN: --ecn sets the TOS byte's lower two bits beside its DSCP;
// a --tos whose own ECN bits differ, a bad value and a stream target are
// usage errors naming the flags.
func TestApplyECN(t *testing.T) {
	cases := []struct {
		ecn      string
		tos      int
		tosGiven bool
		scheme   string
		want     int    // the TOS byte after
		err      string // "": none
	}{
		{"", -1, false, "udp", -1, ""},
		{"ect0", -1, false, "udp", 2, ""},
		{"ect1", 184, true, "udp", 185, ""},
		{"ce", 10 << 2, false, "udp", 10<<2 | 3, ""}, // --dscp 10
		{"ect1", 185, true, "udp", 185, ""},          // the same bits twice
		{"ect1", 186, true, "udp", 0, "--tos 186 sets the ECN bits to ECT(0) and --ecn ect1 to ECT(1)"},
		{"ect2", -1, false, "udp", 0, `--ecn "ect2": want ect0, ect1 or ce`},
		{"ect0", -1, false, "tcp", 0, "--ecn is for udp://, stamp:// and echo:// targets"},
		{"ect1", -1, false, "stamp", 1, ""}, // a STAMP or echo peer gets the bits too
		{"ce", -1, false, "echo", 3, ""},
	}
	for _, c := range cases {
		o := sockopt.Options{TOS: c.tos}
		err := applyECN(&o, c.ecn, c.tosGiven, c.scheme)
		switch {
		case c.err == "" && (err != nil || o.TOS != c.want):
			t.Errorf("applyECN(%q, tos %d, %s) = %v, TOS %d; want TOS %d", c.ecn, c.tos, c.scheme, err, o.TOS, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("applyECN(%q, tos %d, %s) = %v; want an error with %q", c.ecn, c.tos, c.scheme, err, c.err)
		}
	}
}
