package client

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// TestCheck: each rule refuses with a *ConfigError naming its flag, and
// wrapping ErrConfig; a flag given as 0 is refused where Config's zero
// means the default, and the command line's bounds apply to a Config a
// command line made only.
func TestCheck(t *testing.T) {
	udp := transport.Target{Scheme: "udp"}
	tcp := transport.Target{Scheme: "tcp"}
	tests := []struct {
		name   string
		cfg    Config
		target transport.Target
		given  []string
		flag   string // "": no error
	}{
		{"defaults", Config{Size: DefaultSize, Window: 1, Timeout: time.Second}, udp, nil, ""},
		{"window given 0", Config{}, udp, []string{"window"}, "window"},
		{"window 0 not given", Config{}, udp, nil, ""},
		{"duration given 0", Config{}, udp, []string{"duration"}, "duration"},
		{"timeout past the command line's bound", Config{Timeout: time.Hour}, udp, nil, "timeout"},
		{"rate given 0", Config{}, udp, []string{"rate"}, "rate"},
		{"rate max", Config{Unpaced: true}, udp, []string{"rate"}, ""},
		{"rate max, Poisson", Config{Unpaced: true, Poisson: true}, udp, []string{"rate", "poisson"}, "rate"},
		{"kernel stamps over TCP", Config{Stamps: tstamp.Kernel}, tcp, nil, "timestamps"},
		{"reconnect over TCP", Config{Reconnect: time.Second}, tcp, []string{"reconnect"}, "reconnect"},
		{"size given 64 with a key", Config{Size: DefaultSize, Key: []byte("k")}, udp, []string{"size"}, "size"},
		{"size 64 with a key", Config{Size: DefaultSize, Key: []byte("k")}, udp, nil, ""},
		{"seed alone", Config{Seed: 1}, udp, []string{"seed"}, "seed"},
		{"period without burst", Config{Period: time.Second}, udp, []string{"period"}, "period"},
		{"one way with a window", Config{OneWay: true, Window: 1}, udp, []string{"window"}, "oneway"},
		{"hold given 0", Config{}, udp, []string{"hold"}, "hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Timeout == 0 {
				tt.cfg.Timeout = DefaultTimeout // the flag's default: a command line always gives one
			}
			err := tt.cfg.Check(Command{Target: tt.target, Given: func(f string) bool { return slices.Contains(tt.given, f) }})
			var ce *ConfigError
			switch {
			case tt.flag == "" && err != nil:
				t.Fatalf("Check, given %q: %v, want nil", tt.given, err)
			case tt.flag == "":
			case !errors.As(err, &ce) || ce.Flag != tt.flag || !errors.Is(err, ErrConfig):
				t.Fatalf("Check, given %q: %v, want a ConfigError for --%s wrapping ErrConfig", tt.given, err, tt.flag)
			}
		})
	}
	// Without a command line, Run takes what the command line's bounds
	// refuse.
	if _, err := (Config{Timeout: time.Hour}).withDefaults(); err != nil {
		t.Errorf("withDefaults(Timeout: 1h) = %v, want nil", err)
	}
}
