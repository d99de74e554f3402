package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-net/volley/internal/testconn"
	"github.com/volley-net/volley/internal/testrelay"
	"github.com/volley-net/volley/internal/transport"
	"github.com/volley-net/volley/internal/wire"
)

// stripAuth is a testconn.Conn whose messages lose their authentication flag on
// the way up: the reflector behind it sees unsigned Hellos, as one from
// before ErrorNoKey saw a keyed client's (it took them, and answered with
// an unsigned Cookie).
type stripAuth struct{ *testconn.Conn }

func (c stripAuth) Write(b []byte) (int, error) {
	m := append([]byte(nil), b...)
	var h wire.Header
	if h.Decode(m) == nil {
		h.Flags &^= wire.FlagAuth
		_ = h.Encode(m)
	}
	return c.Conn.Write(m)
}

// TestKeyedClientUnkeyedReflector: a keyed client against a reflector
// without a key fails at its first answer, with the reason, instead of
// waiting out its tries: the reflector refuses the signed Hello with
// ErrorNoKey, and an older one's unsigned Cookie says the same.
func TestKeyedClientUnkeyedReflector(t *testing.T) {
	for _, tt := range []struct {
		name string
		old  bool
	}{{"refused", false}, {"unsigned cookie", true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := testconn.New(t)
				c.Delay = time.Millisecond
				cfg := Config{Key: []byte("open sesame"), Timeout: time.Second, Count: 10}
				start := time.Now()
				var conn transport.Conn = c
				if tt.old {
					conn = stripAuth{c}
				}
				_, err := Run(context.Background(), cfg, conn)
				took := time.Since(start) // the bubble's clock: exact
				if !errors.Is(err, ErrAuth) || err == nil || !strings.Contains(err.Error(), "the reflector has no key") {
					t.Fatalf("Run: %v, want ErrAuth saying the reflector has no key", err)
				}
				if took >= cfg.Timeout {
					t.Errorf("failed after %v: want the first answer (2ms), not a timeout", took)
				}
			})
		})
	}
}

// TestThresholdSkipsColdProbes: the threshold does not judge the first
// ThresholdSkip probes (still counted), and judges the ones after them.
func TestThresholdSkipsColdProbes(t *testing.T) {
	var cases []runCase
	for _, tt := range []struct {
		slow    uint64 // the probe that takes 2ms
		wantHit bool
	}{{1, false}, {10, false}, {11, true}} {
		cases = append(cases, runCase{
			name:  fmt.Sprintf("slow probe %d", tt.slow),
			delay: 100 * time.Microsecond,
			path: func(_ *testing.T, c *testconn.Conn) {
				c.DelayUpOf = func(seq uint64) time.Duration {
					if seq == tt.slow {
						return 2 * time.Millisecond
					}
					return 100 * time.Microsecond
				}
			},
			cfg: Config{Threshold: time.Millisecond, ThresholdSkip: 10, Count: 50},
			check: func(t *testing.T, r ran) {
				res := r.res
				hit := res.Threshold
				switch {
				case tt.wantHit && (res.Stopped != "threshold" || hit == nil || hit.Seq != tt.slow):
					t.Errorf("probe %d slow: stopped %q, hit %+v, want it judged", tt.slow, res.Stopped, hit)
				case !tt.wantHit && (hit != nil || res.Stopped != "count" || res.Summary.RTT.Max < 2*time.Millisecond):
					t.Errorf("probe %d slow: stopped %q, hit %+v, rtt max %v, want it not judged but counted", tt.slow, res.Stopped, hit, res.Summary.RTT.Max)
				}
				if res.Config.ThresholdSkip != 10 {
					t.Errorf("config threshold skip = %d, want 10", res.Config.ThresholdSkip)
				}
			},
		})
	}
	runCases(t, cases)
}

// TestReflectorEndsSession: a session the reflector ends after its longest
// duration ends the run with ErrEnded, which says so, and the results so
// far.
func TestReflectorEndsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testconn.NewWith(t, testconn.Reflector{MaxDuration: time.Second})
		c.Delay = time.Millisecond
		res, err := Run(context.Background(), Config{Duration: time.Minute}, c)
		if !errors.Is(err, ErrEnded) || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the session reached the reflector's longest duration (its --max-duration)") {
			t.Fatalf("Run: %v, want ErrEnded with the reason", err)
		}
		if res == nil || res.Stopped != "reflector-ended" || res.Summary.Counts.Received == 0 {
			t.Fatalf("result %+v: want the partial results, stopped by the reflector", res)
		}
	})
}

// TestTimeoutWithoutIntervals: a closed-loop run with no interval reports
// still wakes at its oldest probe's timeout: the probe whose reply is held
// up is declared lost then (and late when its reply comes), and the probes
// after it go on meanwhile. The loop once looked for the timeout in the
// slot of the probe answered last, found none, and slept until the reply
// (an RTT of a second, nothing lost) or the next report. This test did
// not fail before that fix (in the bubble a deadline passes only while the
// loop waits, which kept a stale deadline chain alive); TestTimeoutRealSocket
// did, every time.
func TestTimeoutWithoutIntervals(t *testing.T) {
	const held = 5000
	runCases(t, []runCase{{
		name:  "held up",
		delay: 50 * time.Microsecond,
		path: func(t *testing.T, c *testconn.Conn) {
			c.DelayUpOf = func(seq uint64) time.Duration {
				if seq == held {
					return time.Second
				}
				return 50 * time.Microsecond
			}
		},
		cfg: Config{Duration: 3 * time.Second, Timeout: 100 * time.Millisecond, ReportInterval: -1},
		check: func(t *testing.T, r ran) {
			c := r.res.Summary.Counts
			if c.Lost != 1 {
				t.Fatalf("sent %d lost %d, want probe %d lost at its timeout and no other", c.Sent, c.Lost, held)
			}
			if max := r.res.Summary.RTT.Max; max >= 100*time.Millisecond {
				t.Fatalf("RTT max %v: the held-up reply was taken as an answer, not as late", max)
			}
		},
	}})
}

// TestTimeoutRealSocket is TestTimeoutWithoutIntervals through real UDP
// sockets, a reflector and a relay that holds one probe a second, in real
// time (where the bug showed): the held probe is lost at its timeout and
// its reply, when it comes, is not taken for a round trip.
func TestTimeoutRealSocket(t *testing.T) {
	const held = 2000
	up := func(h wire.Header) testrelay.Action {
		if h.Type == wire.TypeProbe && h.Seq == held {
			return testrelay.Action{Delay: time.Second}
		}
		return testrelay.Action{}
	}
	relay, err := testrelay.Start(loopbackReflector(t), up, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	conn := dialUDP(t, relay.Addr())
	const timeout = 200 * time.Millisecond
	res, err := Run(t.Context(), Config{Count: 4000, Timeout: timeout, ReportInterval: -1}, conn)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Summary.Counts; c.Lost < 1 {
		t.Fatalf("counts %+v: want probe %d lost at its timeout", c, held)
	}
	if max := res.Summary.RTT.Max; max >= timeout {
		t.Fatalf("RTT max %v, past the %v timeout: a held-up reply was taken for a round trip", max, timeout)
	}
}
