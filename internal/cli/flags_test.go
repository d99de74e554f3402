package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestRejectedValues: values taken before and then misused, or blamed on
// something else, are usage errors (exit 2) whose one line names the flag
// and what it takes. Every case fails before it reaches a socket.
func TestRejectedValues(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in the message, in order
		not  string   // not in the message ("": nothing)
	}{
		{[]string{"client", "--rate", "0"}, []string{"--rate 0", "more than 0", "1M probes/s", "max"}, ""},
		{[]string{"client", "--rate", "-5"}, []string{"--rate -5", "more than 0"}, ""},
		{[]string{"client", "--rate", "2.5M"}, []string{"--rate 2.5M", "at most 1M"}, "e+06"},
		{[]string{"client", "--ttl", "0"}, []string{"--ttl 0", "1 to 255"}, ""},
		{[]string{"client", "--ttl", "256"}, []string{"--ttl 256", "1 to 255"}, ""},
		{[]string{"client", "--tos", "-1"}, []string{"--tos -1", "0 to 255"}, ""},
		{[]string{"client", "--dscp", "-1"}, []string{"--dscp -1", "0 to 63"}, ""},
		{[]string{"client", "--buffer", "0"}, []string{"--buffer 0", "1K to 1G"}, ""},
		{[]string{"client", "--buffer", "4G"}, []string{"--buffer 4G", "1K to 1G"}, ""},
		{[]string{"client", "--timeout", "1ns"}, []string{"--timeout 1ns", "1ms to 1m"}, ""},
		{[]string{"client", "--timeout", "2h"}, []string{"--timeout 2h", "1ms to 1m"}, ""},
		{[]string{"client", "--reconnect=1ns"}, []string{"--reconnect=1ns", "at least 100ms"}, ""},
		{[]string{"client", "-i", "10us"}, []string{"--report-interval 10µs", "at least 10ms", "0 for none"}, ""},
		{[]string{"client", "-i", "0.001"}, []string{"--report-interval 1ms", "at least 10ms"}, ""},
		{[]string{"client", "-t", "0"}, []string{"--duration 0", "positive"}, ""},
		{[]string{"client", "--hold", "2"}, []string{"--hold", "with a unit"}, ""},
		{[]string{"client", "--hold", "2h"}, []string{"--hold 2h", "1µs to 1h"}, ""},
		{[]string{"client", "--hold", "100ns"}, []string{"--hold 100ns", "1µs to 1h"}, ""},
		{[]string{"client", "-l", "10M"}, []string{"--size 10M", "65000"}, "10485760"},
		{[]string{"client", "--reply-size", "40"}, []string{"--reply-size 40", "64 to 65000 bytes over UDP"}, "(65000)"},
		{[]string{"client", "--reply-size", "40", "tcp://127.0.0.1:1"}, []string{"--reply-size 40", "64 to 4194304 bytes (4M) over TCP"}, ""},
		{[]string{"client", "--busy-poll=foo"}, []string{`--busy-poll "foo"`, "true or false"}, "strconv"},
		{[]string{"client", "--count", "abc"}, []string{`--count "abc"`, "a whole number"}, "strconv"},
		{[]string{"client", "--seed=-1"}, []string{`--seed "-1"`, "a whole number from 0 to 18446744073709551615"}, "strconv"},
		{[]string{"client", "--count", "99999999999999999999"}, []string{`--count "99999999999999999999"`, "a whole number from"}, "strconv"},
		{[]string{"client", "--load", "sideways"}, []string{"--load \"sideways\"", "down, up or both", ":N"}, ""},
		{[]string{"client", "--load", "up:0"}, []string{"--load \"up:0\"", "1 to 8"}, ""},
		{[]string{"client", "--load", "both:x"}, []string{"--load \"both:x\"", "1 to 8"}, ""},
		{[]string{"client", "--load", "up", "--phase", "100ms"}, []string{"--phase 100ms", "1s to 1m"}, ""},
		{[]string{"client", "--load", "down", "-t", "3s"}, []string{"--duration", "--load", "--phase"}, ""},
		{[]string{"client", "--load", "down", "-i", "1s"}, []string{"--report-interval", "--load"}, ""},
		{[]string{"client", "--load", "down", "-P", "2"}, []string{"--parallel", "--load"}, ""},
		{[]string{"client", "--load", "down", "--rate", "max"}, []string{"--rate max", "--load"}, ""},
		{[]string{"client", "--load", "down", "dbus://session"}, []string{"--load", "udp://, tcp:// or unix://", "dbus://"}, ""},
		{[]string{"client", "--phase", "2s"}, []string{"--phase", "with --load"}, ""},
		{[]string{"client", "--reconnect", "2m", "127.0.0.1"}, []string{"--reconnect 2m", "--reconnect=2m"}, "TARGET, got"},
		{[]string{"client", "--reconnect", "2m"}, []string{"--reconnect=2m"}, ""},
		{[]string{"client", "127.0.0.1", "--reconnect", "90"}, []string{"--reconnect=90"}, ""},
		{[]string{"client", "tcp://"}, []string{"tcp://HOST[:PORT]"}, "udp://"},
		{[]string{"client", "--timestamps", "hardware", "tcp://127.0.0.1:1"}, []string{"--timestamps hardware", "tcp has no stamps", "user or auto"}, "--timestamps kernel"},
		{[]string{"client", "--timestamps", "kernel", "unix:///nonexistent/x"}, []string{"--timestamps kernel", "unix has no stamps", "user or auto"}, ""},
		{[]string{"client", "--timestamps", "kernel", "--oneway"}, []string{"--timestamps kernel", "--oneway"}, ""},
		{[]string{"server", "--listen", "garbage"}, []string{"--listen garbage", "HOST:PORT", "0 to 65535"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:80000"}, []string{"--listen 127.0.0.1:80000", "0 to 65535"}, ""},
		{[]string{"server", "--listen", "nonsense:port:x"}, []string{"--listen nonsense:port:x", "HOST:PORT"}, ""},
		{[]string{"server", "-i", "1us"}, []string{"--report-interval 1µs", "at least 10ms"}, ""},
		{[]string{"server", "--ttl", "0"}, []string{"--ttl 0", "1 to 255"}, ""},
		{[]string{"server", "--tos", "300"}, []string{"--tos 300", "0 to 255"}, ""},
		{[]string{"server", "--buffer", "0"}, []string{"--buffer 0", "1K to 1G"}, ""},
		{[]string{"server", "--idle-timeout", "1ns"}, []string{"--idle-timeout 1ns", "at least 1s"}, ""},
		{[]string{"server", "--max-duration", "10ms"}, []string{"--max-duration 10ms", "at least 1s"}, ""},
		{[]string{"server", "--send-timeout", "1us"}, []string{"--send-timeout 1µs", "at least 100ms"}, ""},
		{[]string{"server", "--handshake-timeout", "1ns"}, []string{"--handshake-timeout 1ns", "at least 100ms"}, ""},
		{[]string{"server", "--max-rate", "0"}, []string{"--max-rate 0", "positive"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "fast"}, []string{`"fast"`, "--max-load-rate", "bits/s", "100M or 1G"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "-1G"}, []string{`"-1G"`, "--max-load-rate", "0 or more"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "1T"}, []string{`"1T"`, "--max-load-rate", "k, M or G"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "1e20"}, []string{`"1e20"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "0.0000001"}, []string{`"0.0000001"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--allow-load", "--max-load-rate", "7999"}, []string{`"7999"`, "--max-load-rate", "0 (no limit) or 8k to 1000G bits/s"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--max-load-rate", "100M"}, []string{"--max-load-rate 100M", "without --allow-load"}, ""},
		{[]string{"server", "--listen", "127.0.0.1:0", "--max-load-rate", "2.5G"}, []string{"--max-load-rate 2.5G", "without --allow-load"}, ""},
		{[]string{"server", "--max-size", "8M"}, []string{"--max-size 8M", "4M"}, "8388608"},
		{[]string{"server", "--busy-poll", "udp"}, []string{"--busy-poll udp", "--busy-poll=udp"}, ""},
		{[]string{"monitor"}, []string{"no targets", "--targets"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--rate", "0"}, []string{"--rate 0", "positive"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--format", "json"}, []string{"--format json", "--once"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--format", "csv"}, []string{"--format \"csv\"", "text", "jsonl"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--every", "1m"}, []string{"--every 1m", "--duration"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--duration", "1m", "--every", "1s"}, []string{"--every 1s", "at least --duration"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--metrics-listen", "garbage"}, []string{"--metrics-listen garbage", "HOST:PORT"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--metrics-listen", "none"}, []string{"--metrics-listen none", "nowhere"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--metrics-listen", "127.0.0.1:0", "--probe-allow", "nonsense"}, []string{"--probe-allow", "nonsense"}, ""},
		{[]string{"monitor", "stamp://127.0.0.1:9", "--metrics-listen", "127.0.0.1:0"}, []string{"stamp"}, ""},
		{[]string{"monitor", "udp://127.0.0.1:9", "--interval", "100ms", "--metrics-listen", "127.0.0.1:0"}, []string{"timeout 1s", "at most 5 intervals", "100ms"}, ""},
		{[]string{"monitor", "--targets", "/nonexistent/targets.yml", "--metrics-listen", "127.0.0.1:0"}, []string{"/nonexistent/targets.yml"}, ""},
		{[]string{"agent", "--listen", "127.0.0.1:0"}, []string{"--peers", "--peers-dns"}, ""},
		{[]string{"agent", "--listen", "127.0.0.1:0", "--peers", "p.yml", "--mesh-k", "0"}, []string{"--mesh-k 0", "at least 1"}, ""},
		{[]string{"agent", "--listen", "127.0.0.1:17999", "--peers", "p.yml", "--metrics-listen", ":17999"}, []string{"--metrics-listen :17999", "--listen 127.0.0.1:17999", "same TCP port"}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := tt.args
			if args[0] == "server" && !strings.HasPrefix(strings.Join(args, " "), "server --listen") {
				args = append(args, "--listen", "127.0.0.1:0") // a server that ran would not take the default port
			}
			// A value taken would start a run: the deadline ends it,
			// and the test fails instead of hanging. A value refused
			// never gets to read the clock.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, args, &stdout, &stderr)
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
			if code != ExitUsage || !ok || (tt.not != "" && strings.Contains(msg, tt.not)) || strings.Count(msg, "\n") != 1 || stdout.Len() != 0 {
				t.Fatalf("Main(%q) = %d, stdout %q, stderr %q; want %d and one line with %q in order, without %q",
					tt.args, code, stdout.String(), msg, ExitUsage, tt.want, tt.not)
			}
		})
	}
}

// TestBareSeconds: -t and -i take a bare number as seconds, as iperf's
// do; the other durations want a unit.
func TestBareSeconds(t *testing.T) {
	tests := []struct {
		cmd  string
		args []string
		flag string
		want string
	}{
		{"client", []string{"-t", "2"}, "duration", "2s"},
		{"client", []string{"-t", "0.5"}, "duration", "500ms"},
		{"client", []string{"-i", "0.1"}, "report-interval", "100ms"},
		{"client", []string{"--duration=90"}, "duration", "1m30s"},
		{"client", []string{"-t", "2m"}, "duration", "2m"},
		{"server", []string{"-i", "5"}, "report-interval", "5s"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		cmd := newClientCmd(&out, &out)
		if tt.cmd == "server" {
			cmd = newServerCmd(&out)
		}
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Errorf("%s %q: %v", tt.cmd, tt.args, err)
			continue
		}
		if got := cmd.Flags().Lookup(tt.flag).Value.String(); got != tt.want {
			t.Errorf("%s %q: --%s = %s, want %s", tt.cmd, tt.args, tt.flag, got, tt.want)
		}
	}
	var out bytes.Buffer
	for _, args := range [][]string{{"--timeout", "2"}, {"--hold", "1"}, {"--period", "3"}} {
		if err := newClientCmd(&out, &out).ParseFlags(args); err == nil || !strings.Contains(err.Error(), "with a unit") {
			t.Errorf("client %q: %v, want an error asking for a unit", args, err)
		}
	}
}

// TestClientHelp: the client's --help names every target form and lists
// its flags under headings, each flag under one; the defaults read as a
// user types them.
func TestClientHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"client", "--help"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("client --help = %d, stderr %q", code, stderr.String())
	}
	help := stdout.String()
	for _, form := range []string{"HOST:PORT", "[IPv6]:PORT", "udp://HOST[:PORT]", "tcp://HOST[:PORT]", "unix:///PATH", "unixgram:///PATH", "dbus://session", "dbus:ADDRESS"} {
		if !strings.Contains(help, form) {
			t.Errorf("client --help does not show the target form %s", form)
		}
	}
	// Each heading in order, and under each, its flags.
	at := 0
	for _, g := range clientFlagGroups {
		i := strings.Index(help[at:], "\n"+g.title+" flags:\n")
		if i < 0 {
			t.Fatalf("client --help: no heading %q after offset %d:\n%s", g.title+" flags:", at, help)
		}
		at += i + 1
		end := strings.Index(help[at:], "\n\n")
		if end < 0 {
			end = len(help) - at
		}
		section := help[at : at+end]
		for _, name := range g.flags {
			if !strings.Contains(section, "--"+name+" ") {
				t.Errorf("client --help: --%s is not under %q", name, g.title)
			}
		}
	}
	other := help[strings.Index(help, "\nOther flags:\n"):]
	if strings.Count(other, "--") != 1 || !strings.Contains(other, "--help") {
		t.Errorf("client --help: flags under no heading:\n%s", other)
	}
	seen := map[string]int{}
	for _, g := range clientFlagGroups {
		for _, name := range g.flags {
			seen[name]++
		}
	}
	newClientCmd(&stdout, &stderr).Flags().VisitAll(func(f *pflag.Flag) {
		if seen[f.Name] != 1 {
			t.Errorf("client flag --%s is under %d headings, want 1", f.Name, seen[f.Name])
		}
	})
}

// TestServerHelpDefaults: no default in --help reads as a placeholder
// (-1) or in exponent form (1e+06).
func TestServerHelpDefaults(t *testing.T) {
	for _, cmd := range []string{"server", "client"} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{cmd, "--help"}, &stdout, &stderr); code != ExitOK {
			t.Fatalf("%s --help = %d, stderr %q", cmd, code, stderr.String())
		}
		for _, bad := range []string{"(default -1)", "e+0", "(default 0s)", "(default 67108864)", "(default 4194304)"} {
			if strings.Contains(stdout.String(), bad) {
				t.Errorf("%s --help shows %q", cmd, bad)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	Main(context.Background(), []string{"server", "--help"}, &stdout, &stderr)
	for _, want := range []string{"--max-rate pps", "(default 1M)", "(default 4M)", "(default 64M)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("server --help does not show %q", want)
		}
	}
}

// TestPortInUse: a port in use is an error (exit 1), said once.
func TestPortInUse(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	addr := pc.LocalAddr().String()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"server", "--listen", addr}, &stdout, &stderr)
	msg := stderr.String()
	if code != ExitError || strings.Count(msg, addr) != 1 || strings.Count(msg, "listen") != 1 || !strings.Contains(msg, "address already in use") {
		t.Fatalf("server --listen %s (in use) = %d, stderr %q; want %d, the address and the reason once", addr, code, msg, ExitError)
	}
}

// TestReloadsOnHangup: SIGHUP reloads the daemons' files, and ends every
// other command (volley monitor --once included) as it always did.
func TestReloadsOnHangup(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"monitor", "udp://h"}, true},
		{[]string{"agent", "--peers", "p.yml"}, true},
		{[]string{"monitor", "udp://h", "--once"}, false},
		{[]string{"monitor", "--once=true"}, false},
		{[]string{"client", "monitor"}, false},
		{[]string{"server"}, false},
		{nil, false},
	} {
		if got := ReloadsOnHangup(tt.args); got != tt.want {
			t.Errorf("ReloadsOnHangup(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
