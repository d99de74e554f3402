package underload

import (
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/load"
	"github.com/volley-net/volley/internal/result"
	"github.com/volley-net/volley/internal/stats"
)

// Draft is the version of draft-ietf-ippm-responsiveness whose score the
// runs give.
const Draft = "draft-ietf-ippm-responsiveness-08"

// trimKeep is the share of round trips the draft's trimmed mean keeps.
const trimKeep = 95

// observer keeps the delays the score needs, from the replies the run
// records (on its receiving goroutine; read after the run returns): the
// idle and the loaded phase's round trips, and the loaded phase's one-way
// delays.
type observer struct {
	phase        time.Duration
	idleRTT, rtt *stats.Dist
	up, down     *stats.Dist
}

func newObserver(phase time.Duration) *observer {
	return &observer{phase: phase, idleRTT: stats.NewDist(), rtt: stats.NewDist(), up: stats.NewDist(), down: stats.NewDist()}
}

// lost records the idle and the loaded phase's lost probes as round trips
// of timeout.
func (o *observer) lost(idle, loaded uint64, timeout time.Duration) {
	for range idle {
		o.idleRTT.Record(int64(timeout))
	}
	for range loaded {
		o.rtt.Record(int64(timeout))
	}
}

// Reply records r by the phase its probe was sent in.
func (o *observer) Reply(r client.Reply) {
	switch min(max(int(r.Sent/o.phase), 0), phases-1) {
	case phaseIdle:
		o.idleRTT.Record(int64(r.RTT))
	case phaseLoaded:
		o.rtt.Record(int64(r.RTT))
		if r.OneWay {
			o.up.Record(int64(r.Up))
			o.down.Record(int64(r.Down))
		}
	}
}

// figures builds the Load of a run from its intervals (one a phase), the
// observer's delays and the schedule's streams. A loaded phase whose
// streams never ran, or were refused (the run ended there), is left out,
// with those after it: it was not what was asked for.
func (lc Config) figures(ivs []result.Interval, o *observer, sc *schedule, timeout time.Duration) *result.Load {
	l := &result.Load{Direction: directionName(lc.Directions), Streams: lc.Streams, Phase: lc.Phase,
		SeriesStep: Step, Series: sc.series, Errors: sc.errs}
	if sc.err != nil {
		l.Errors = append(l.Errors, sc.err.Error())
	}
	for i, iv := range ivs {
		if i == phaseLoaded && (sc.granted == 0 || sc.err != nil) {
			break
		}
		p := result.Phase{Name: phaseNames[i], Loaded: i == phaseLoaded, Probes: iv}
		if p.Loaded {
			p.Streams = sc.granted
			p.BytesUp, p.BytesDown = sc.movedUp, sc.movedDown
			if secs := sc.span().Seconds(); secs > 0 { // from the streams' start to their stop
				p.BitsPerSecUp, p.BitsPerSecDown = float64(p.BytesUp)*8/secs, float64(p.BytesDown)*8/secs
			}
		}
		l.Phases = append(l.Phases, p)
	}
	if len(l.Phases) == 0 {
		return l
	}
	idle := l.Phases[phaseIdle].Probes
	for i := 1; i < len(l.Phases); i++ {
		l.Phases[i].Added = added(idle, l.Phases[i].Probes)
	}
	if len(l.Phases) > phaseLoaded {
		// A probe lost is a round trip that did not end in time: it
		// counts as one of --timeout.
		o.lost(l.Phases[phaseIdle].Probes.Counts.Lost, l.Phases[phaseLoaded].Probes.Counts.Lost, timeout)
		l.Responsiveness = responsiveness(o, l.Phases[phaseLoaded].Added.Queue)
	}
	return l
}

// directionName returns "down", "up" or "both".
func directionName(dirs []load.Direction) string {
	if len(dirs) == 2 {
		return "both"
	}
	if len(dirs) == 1 {
		return dirs[0].String()
	}
	return ""
}

// added returns what phase p added to the idle phase's delays.
func added(idle, p result.Interval) *result.Added {
	a := &result.Added{RTT: minus(p.RTT, idle.RTT)}
	if p.Up.Count > 0 && idle.Up.Count > 0 {
		a.Up, a.Down = minus(p.Up, idle.Up), minus(p.Down, idle.Down)
		a.Queue = queue(median(idle.RTT), median(p.Up)-median(idle.Up), median(p.Down)-median(idle.Down))
	}
	return a
}

// minus returns l's percentiles less base's, where both have them.
func minus(l, base result.Latency) []result.Percentile {
	if l.Count == 0 || base.Count == 0 {
		return nil
	}
	out := make([]result.Percentile, 0, len(l.Percentiles))
	for i, p := range l.Percentiles {
		if i < len(base.Percentiles) && base.Percentiles[i].P == p.P {
			out = append(out, result.Percentile{P: p.P, Value: p.Value - base.Percentiles[i].Value})
		}
	}
	return out
}

// median returns l's 50th percentile (its mean when it has none).
func median(l result.Latency) time.Duration {
	if v, ok := l.Percentile(50); ok {
		return v
	}
	return l.Mean
}

// QueueFloor is the least growth of a direction's median delay that
// counts as a queue: a millisecond, or a tenth of the idle round trip's
// median when that is more.
const QueueFloor = time.Millisecond

// queue says where the delay grew: "up", "down", "both" (each by at
// least a quarter of the other's growth) or "none".
func queue(idleRTT, up, down time.Duration) string {
	floor := max(QueueFloor, idleRTT/10)
	upGrew, downGrew := up >= floor, down >= floor
	switch {
	case upGrew && downGrew && up >= 4*down:
		return "up"
	case upGrew && downGrew && down >= 4*up:
		return "down"
	case upGrew && downGrew:
		return "both"
	case upGrew:
		return "up"
	case downGrew:
		return "down"
	}
	return "none"
}

// responsiveness returns the loaded phase's score, or nil when it had no
// replies.
func responsiveness(o *observer, queue string) *result.Responsiveness {
	tm, ok := o.rtt.TrimmedMean(trimKeep)
	if !ok || tm <= 0 {
		return nil
	}
	r := &result.Responsiveness{Draft: Draft, RPM: rpm(tm), TrimmedMean: tm, Samples: o.rtt.Count(), Queue: queue}
	if idle, ok := o.idleRTT.TrimmedMean(trimKeep); ok && idle > 0 {
		r.IdleRPM = rpm(idle)
	}
	r.TrimmedUp, _ = o.up.TrimmedMean(trimKeep)
	r.TrimmedDown, _ = o.down.TrimmedMean(trimKeep)
	return r
}

// rpm is round trips per minute at a round trip of d.
func rpm(d time.Duration) float64 { return float64(time.Minute) / float64(d) }
