// One bounded measurement of a target, for /probe and --once.

package monitor

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// Probe bounds: a probe lasts its schedule's Duration (DefaultProbeDuration
// when zero), at most MaxProbeDuration.
const (
	DefaultProbeDuration = time.Second
	MaxProbeDuration     = 10 * time.Second
)

// Probe measures t once, for its Schedule.Duration (DefaultProbeDuration
// when zero, at most MaxProbeDuration; any length, unlike a round's) at
// its rate, Rate×Duration probes (at least one), and returns the
// result: one interval's figures in its summary. rec, when not nil, hears
// the replies, the interval and the session as a monitored target's
// Recorder does. The process's rate cap does not apply: the caller bounds
// how many probes run at once.
func Probe(ctx context.Context, t Target, rec Recorder) (*result.Result, error) {
	d := probeDuration(t.Schedule)
	return measure(ctx, t, rec, d, d) // one interval: the whole probe
}

// DefaultOnceDuration is how long Once measures when the schedule says
// no Duration.
const DefaultOnceDuration = 5 * time.Second

// Once measures t once, for its Schedule.Duration (DefaultOnceDuration
// when zero; any length), with its intervals (volley monitor --once). rec,
// when not nil, hears it as Probe's does.
func Once(ctx context.Context, t Target, rec Recorder) (*result.Result, error) {
	d := t.Schedule.Duration
	if d == 0 {
		d = DefaultOnceDuration
	}
	return measure(ctx, t, rec, d, Defaults(t.Schedule).Interval)
}

// measure measures t once for d, in intervals of every.
func measure(ctx context.Context, t Target, rec Recorder, d, every time.Duration) (*result.Result, error) {
	// The duration is the measurement's, not a round's: any length will do.
	t.Schedule.Duration, t.Schedule.Every = 0, 0
	t, addr, err := checkTarget(t)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = discard{}
	}
	conn, err := transport.DialWith(ctx, addr, transport.DialOptions{Socket: sockopt.Options{TOS: -1}})
	if err != nil {
		rec.Session(false, err)
		return nil, fmt.Errorf("target %q: %w", t.Name, err)
	}
	defer conn.Close()
	h := client.Funcs{
		OnStart:    func(*result.Result) { rec.Session(true, nil) },
		OnInterval: rec.Interval,
	}
	cfg := clientConfig(&t, addr, t.Schedule.Rate, 0, rec, h)
	// As many probes as the schedule has slots in d (count/rate makes
	// count), and no slot more.
	cfg.Duration, cfg.Reconnect, cfg.Endless = d, 0, false // its summary is the answer
	cfg.Count = uint64(max(1, math.Round(t.Schedule.Rate*d.Seconds())))
	cfg.ReportInterval = every
	res, err := client.Run(ctx, cfg, conn)
	if err != nil {
		rec.Session(false, err)
		return res, fmt.Errorf("target %q: %w", t.Name, err)
	}
	return res, nil
}

// probeDuration is how long a probe of s lasts.
func probeDuration(s Schedule) time.Duration {
	if s.Duration == 0 {
		return DefaultProbeDuration
	}
	return min(s.Duration, MaxProbeDuration)
}
