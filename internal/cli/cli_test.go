package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{[]string{"version"}, ExitOK, "volley ", ""},
		{[]string{"client", "--window", "0"}, ExitUsage, "", "--window 0"},
		{[]string{"client", "--timeout", "0s"}, ExitUsage, "", "--timeout"},
		{[]string{"client", "-i", "-1s"}, ExitUsage, "", "--report-interval"},
		{[]string{"client", "--size", "70000"}, ExitUsage, "", "the maximum over UDP is 65000"},
		{[]string{"client", "--percentiles", "101"}, ExitUsage, "", "--percentiles"},
		{[]string{"server", "--listen", "nonsense:port:x"}, ExitUsage, "", "nonsense"},
		{[]string{"version", "extra"}, ExitUsage, "", "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.inStdout) || !strings.Contains(stderr.String(), tt.inStderr) {
				t.Fatalf("Main(%q) = %d, stdout %q, stderr %q; want %d with %q and %q",
					tt.args, code, stdout.String(), stderr.String(), tt.code, tt.inStdout, tt.inStderr)
			}
		})
	}
}

func TestParsePercentiles(t *testing.T) {
	got, err := parsePercentiles("50, 99.9,100")
	if err != nil || len(got) != 3 || got[0] != 50 || got[1] != 99.9 || got[2] != 100 {
		t.Fatalf("parsePercentiles = %v, %v, want [50 99.9 100]", got, err)
	}
	for _, bad := range []string{"", "x", "-1", "50,,99"} {
		if _, err := parsePercentiles(bad); err == nil {
			t.Errorf("parsePercentiles(%q) = nil error, want one", bad)
		}
	}
}

func TestRateFlag(t *testing.T) {
	for in, want := range map[string]float64{"2500": 2500, "100k": 100000, "1.5K": 1500, "2M": 2e6, "0.5": 0.5} {
		var r rateFlag
		if err := r.Set(in); err != nil || r.pps != want || r.max {
			t.Errorf("--rate %s: %v pps, max %v, %v; want %v", in, r.pps, r.max, err, want)
		}
	}
	var r rateFlag
	if err := r.Set("max"); err != nil || !r.max {
		t.Errorf("--rate max: max %v, %v", r.max, err)
	}
	for _, bad := range []string{"", "k", "10x", "fast"} {
		if err := r.Set(bad); err == nil {
			t.Errorf("--rate %q: no error", bad)
		}
	}
}
