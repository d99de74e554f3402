package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/tstamp"
)

// TestForeignRefused: what a peer that is not a volley reflector cannot
// do, and the stamp:// flags elsewhere, are usage errors (exit 2) whose
// one line names the flag. Every case fails before it reaches a socket.
func TestForeignRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string // in the message, in order
	}{
		{[]string{"echo://127.0.0.1:9", "--oneway"}, []string{"--oneway is for volley reflectors", "an echo service"}},
		{[]string{"stamp://127.0.0.1:9", "--hold", "1ms"}, []string{"--hold is for volley reflectors", "a STAMP reflector"}},
		{[]string{"echo://127.0.0.1:9", "--reply-size", "200"}, []string{"--reply-size 200", "the request's size (64 bytes, --size)"}},
		{[]string{"echo://127.0.0.1:9", "--reconnect"}, []string{"--reconnect is for volley reflectors"}},
		{[]string{"stamp://127.0.0.1:9", "--timestamps", "kernel"}, []string{"--timestamps kernel is for udp:// targets", "user or auto"}},
		{[]string{"echo://127.0.0.1:9", "--timestamps", "hardware"}, []string{"--timestamps hardware is for udp:// targets"}},
		{[]string{"echo://127.0.0.1:9", "--key", "k"}, []string{"--key and --key-file", "an echo service takes no key"}},
		{[]string{"connect://127.0.0.1:9", "--size", "100"}, []string{"--size and --workload", "TCP handshake"}},
		{[]string{"connect://127.0.0.1:9", "--busy-poll"}, []string{"--busy-poll is for", "stamp:// and echo://"}},
		{[]string{"stamp://127.0.0.1:9", "--size", "40"}, []string{"--size 40: a STAMP packet is at least 44 bytes"}},
		{[]string{"stamp://127.0.0.1:9", "--size", "100", "--key", "k"}, []string{"--size 100: a STAMP packet is at least 112 bytes"}},
		{[]string{"connect://127.0.0.1:9", "--df"}, []string{"--df is for UDP"}},
		{[]string{"echo://127.0.0.1:9", "--congestion", "bbr"}, []string{"--congestion", "tcp:// targets"}},
		{[]string{"echo://127.0.0.1:9", "--stamp-ssid", "5"}, []string{"--stamp-ssid is for stamp:// targets"}},
		{[]string{"--stamp-stateful"}, []string{"--stamp-stateful is for stamp:// targets"}},
		{[]string{"127.0.0.1", "--stamp-stateful"}, []string{"--stamp-stateful is for stamp:// targets"}},
		{[]string{"stamp://127.0.0.1:9", "--stamp-ssid", "70000"}, []string{"--stamp-ssid 70000", "0 to 65535"}},
		{[]string{"connect://127.0.0.1"}, []string{"connect://127.0.0.1", "no port", "connect://HOST:PORT"}},
		{[]string{"stamp://"}, []string{"no host", "stamp://HOST[:PORT]"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, append([]string{"client"}, tt.args...), &stdout, &stderr)
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
				t.Fatalf("client %q = %d, stdout %q, stderr %q; want %d and one line with %q in order", tt.args, code, stdout.String(), msg, ExitUsage, tt.want)
			}
		})
	}
}

// TestForeignConfig: a foreign target's run is timed with volley's
// clock; a --reply-size equal to the size is the request's; and for
// stamp:// the key is STAMP's, not volley's.
func TestForeignConfig(t *testing.T) {
	for _, tt := range []struct {
		target   string
		args     []string
		stampKey string
		stamps   tstamp.Mode
	}{
		{"stamp://192.0.2.1", []string{"--key", "secret", "--reply-size", "64"}, "secret", tstamp.User},
		{"echo://192.0.2.1", []string{"--reply-size", "64", "--timestamps", "auto"}, "", tstamp.User},
		{"udp://192.0.2.1", []string{"--key", "secret"}, "", tstamp.Auto},
	} {
		t.Run(tt.target, func(t *testing.T) {
			var f clientFlags
			cmd := &cobra.Command{Use: "client"}
			f.register(cmd)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			target, err := transport.ParseTarget(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := f.config(cmd, target)
			if err != nil {
				t.Fatal(err)
			}
			if string(f.stamp.key) != tt.stampKey || cfg.Stamps != tt.stamps {
				t.Errorf("STAMP key %q, stamps %s, want %q, %s", f.stamp.key, cfg.Stamps, tt.stampKey, tt.stamps)
			}
			if target.Foreign() && (cfg.Key != nil || cfg.ReplySize != 0) {
				t.Errorf("volley key %q, reply size %d, want none and 0 (the request's)", cfg.Key, cfg.ReplySize)
			}
			if !target.Foreign() && string(cfg.Key) != "secret" {
				t.Errorf("volley key %q for a volley reflector, want secret", cfg.Key)
			}
		})
	}
}
