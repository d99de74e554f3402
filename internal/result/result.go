// Package result is the versioned model of a volley run. Text, JSON and
// later plots are all rendered from it; durations are time.Duration inside
// and integer nanoseconds (fields ending in _ns) in JSON.
package result

import "time"

// SchemaVersion is the version of the JSON document this package describes.
// docs/result.schema.json is its contract, checked against the golden
// files under report/testdata and against every output of the e2e tests.
// A change that removes or renames a field, or changes its type, unit or
// meaning, must bump this number (and the schema's schema_version const);
// adding a field does not, but the field must be added to the schema.
//
// Version 2: clock_offset says how it was found (method) and what it
// assumes; its drift became an object with its error; its "up" and "down"
// became "estimated_up" and "estimated_down", present only for an
// estimate.
const SchemaVersion = 2

// Result is one client run.
type Result struct {
	SchemaVersion int       `json:"schema_version"`
	Tool          string    `json:"tool"`
	Version       string    `json:"version"`
	Config        Config    `json:"config"`
	Start         time.Time `json:"start"`
	// Intervals holds one entry per report interval, in order.
	Intervals []Interval `json:"intervals"`
	// Summary covers the whole run after warm-up.
	Summary Interval `json:"summary"`
	// Histogram is the RTT histogram of the whole run, when asked for.
	Histogram *Histogram `json:"histogram,omitempty"`
	// Distribution is the whole run's delays as percentile curves and an
	// RTT histogram, always: what a plot of a saved result draws.
	Distribution *Distribution `json:"distribution,omitempty"`
	// ReflectorCount says where the reflector's received count came from:
	// "close" (its final count, exact), "last-reply" (an estimate, when the
	// session could not be closed) or "partial" (after a reconnection: the
	// last session's final count, exact for it; the lost sessions'
	// estimated).
	ReflectorCount string `json:"reflector_count"`
	// PeerResults is what a peer that is not a volley reflector said over
	// the run (Config.Peer says which peer); omitted for a volley
	// reflector. It comes after the intervals, so that a document written
	// as the run goes has the final counts.
	PeerResults *PeerResults `json:"peer_results,omitempty"`
	// Stopped says why the run ended: "duration", "count", "interrupted",
	// "threshold", "reflector-silent", "reflector-gone",
	// "reflector-restarted" (it no longer knew the session),
	// "reflector-ended" (it refused to go on, for example at its longest
	// session duration), "reflector-stalled" (a write to it did not
	// finish in time: it stopped reading) or "reflector-broken" (its
	// stream could not be read on, such as a frame longer than a stream
	// carries).
	Stopped string `json:"stopped"`
	// ClockOffset is the reflector's clock offset, measured (same clock)
	// or estimated, and the one-way delays corrected by an estimate
	// (round-trip runs of one flow).
	ClockOffset *ClockOffset `json:"clock_offset,omitempty"`
	// CPU is what the client's process used over an open-loop run while
	// it sent (from its first measured slot until the end of sending was
	// noticed; omitted under 0.1 s): where the sender did not keep its
	// schedule, it tells a host short of CPU from a rate the path refused.
	// The whole process's: an in-process reflector's and --load's streams
	// count too.
	CPU *CPU `json:"cpu,omitempty"`
	// Timestamps says where the times came from, when a run asked for
	// kernel or hardware stamps (or auto found them).
	Timestamps *Timestamps `json:"timestamps,omitempty"`
	// Reconnects lists the sessions lost mid-run and, with --reconnect,
	// when a new one took over: the gaps in the measurement.
	Reconnects []Reconnect `json:"reconnects,omitempty"`
	// Threshold is the probe whose RTT first exceeded the threshold, when
	// that ended the run.
	Threshold *ThresholdHit `json:"threshold_hit,omitempty"`
	// Path is what the probes' and replies' IP headers said on the way
	// (UDP to a volley reflector; see Path).
	Path *Path `json:"path,omitempty"`
	// Workload breaks the run down by workload entry, when it had a mix.
	Workload []WorkloadEntry `json:"workload,omitempty"`
	// Flows holds each flow's own summary when the run had more than one;
	// Intervals and Summary then cover all flows together.
	Flows []Flow `json:"flows,omitempty"`
	// Load: a latency-under-load run's phases and score (--load).
	Load *Load `json:"load,omitempty"`
	// Error is the error that ended the run early, if any.
	Error string `json:"error,omitempty"`
}

// Config is the configuration as run.
type Config struct {
	Target         string        `json:"target"`
	Transport      string        `json:"transport"`
	LocalAddr      string        `json:"local_addr"`
	RemoteAddr     string        `json:"remote_addr"`
	InProcess      bool          `json:"in_process_reflector"`
	Duration       time.Duration `json:"duration_ns"`
	Count          uint64        `json:"count"`
	WarmupDuration time.Duration `json:"warmup_duration_ns"`
	WarmupCount    uint64        `json:"warmup_count"`
	Size           int           `json:"size"`
	Window         int           `json:"window"`
	Timeout        time.Duration `json:"timeout_ns"`
	ReportInterval time.Duration `json:"report_interval_ns"`
	Percentiles    []float64     `json:"percentiles"`
	Timestamps     string        `json:"timestamps"`
	// Open loop: probes/s asked for (or SendInterval), Poisson gaps.
	Rate         float64       `json:"rate_pps,omitempty"`
	RateMax      bool          `json:"rate_max,omitempty"` // --rate max: no schedule, as fast as the client could send
	SendInterval time.Duration `json:"send_interval_ns,omitempty"`
	Poisson      bool          `json:"poisson,omitempty"`
	Seed         uint64        `json:"seed,omitempty"`
	// Closed-loop bursts: Burst probes every Period.
	Burst     int           `json:"burst,omitempty"`
	Period    time.Duration `json:"period_ns,omitempty"`
	Threshold time.Duration `json:"threshold_ns,omitempty"`
	// ThresholdSkip: the first measured probes that the threshold did
	// not judge (a cold path's).
	ThresholdSkip uint64 `json:"threshold_skip,omitempty"`
	// ReplySize (0: the request's size) and Hold asked of the reflector,
	// and what it granted.
	ReplySize int           `json:"reply_size"`
	Hold      time.Duration `json:"hold_ns"`
	Granted   Grant         `json:"granted"`
	// OneWay: the reflector did not reply; it measured the probes and
	// returned its results, which fill the summary's counts and "up".
	OneWay bool `json:"oneway,omitempty"`
	// Parallel is the number of flows, each its own socket and session.
	Parallel int `json:"parallel"`
	// TCP is the TCP connection as it opened (TCP runs only; of the first
	// flow).
	TCP *TCPConnect `json:"tcp,omitempty"`
	// Socket is what the kernel applied to the client's socket (of the
	// first flow), read back after the options were set.
	Socket *Socket `json:"socket,omitempty"`
	// Peer is what the run measured when it was not a volley reflector
	// (stamp://, echo://, connect://); omitted for a volley reflector.
	// What the peer said is the Result's PeerResults.
	Peer *Peer `json:"peer,omitempty"`
}

// Peer is a peer that is not a volley reflector, and what its answers
// carry: which of the result's figures it has. It is known as the run
// opens; PeerResults holds what the peer said over the run.
type Peer struct {
	// Protocol is "stamp" (an RFC 8762 Session-Reflector, TWAMP-light
	// too), "echo" (RFC 862) or "connect" (TCP handshakes).
	Protocol string `json:"protocol"`
	// OneWay: the answers carry the peer's receive and send times (by its
	// own clock): up, down and response are measured. Without it they
	// are empty.
	OneWay bool `json:"one_way"`
	// Directions: the answers carry the peer's count of probes received,
	// so loss, duplicates and reorders are split by direction. Without
	// it their _up and _down counts are 0, and PeerResults.Note says why.
	Directions bool `json:"directions"`
	// STAMP is how a STAMP run spoke to its reflector.
	STAMP *STAMPPeer `json:"stamp,omitempty"`
}

// STAMPPeer is how a STAMP run spoke to its Session-Reflector.
type STAMPPeer struct {
	// Authenticated: RFC 8762's authenticated mode (HMAC-SHA-256).
	Authenticated bool `json:"authenticated"`
	// Stateful: the user said the reflector numbers its replies itself
	// (RFC 8762 §4.2.1), which splits loss by direction.
	Stateful bool `json:"stateful"`
	// SSID is the Session-Sender Identifier sent (RFC 8972).
	SSID uint16 `json:"ssid"`
}

// PeerResults is what a peer that is not a volley reflector said over the
// run (see Peer), as the run ended.
type PeerResults struct {
	// Note says what the peer's answers cannot tell, in a sentence.
	Note string `json:"note,omitempty"`
	// STAMP is what a STAMP reflector said; Connect a connect:// run's
	// handshakes that did not complete.
	STAMP   *STAMPResults `json:"stamp,omitempty"`
	Connect *ConnectPeer  `json:"connect,omitempty"`
}

// STAMPResults is what a STAMP Session-Reflector said in its replies.
type STAMPResults struct {
	// ErrorEstimate is the last one the reflector sent (RFC 4656
	// §4.1.2), 0 when no reply came.
	ErrorEstimate ErrorEstimate `json:"error_estimate"`
	// Replies whose reflector sequence number differed from the
	// sender's: a stateful reflector's, or a reflector that lost count.
	Renumbered uint64 `json:"renumbered"`
	// SenderTTL is the TTL or hop limit the reflector last said a probe
	// arrived with (RFC 8762's Session-Sender TTL): with the TTL sent, the
	// hops on the way up. 0 when no reply said one.
	SenderTTL uint8 `json:"sender_ttl,omitempty"`
}

// ErrorEstimate is RFC 4656's error estimate of a clock: Synchronized is
// its S bit (the clock is synchronized to UTC), Error its value (scale and
// multiplier) in ns, Raw the 16 bits as sent.
type ErrorEstimate struct {
	Synchronized bool          `json:"synchronized"`
	Error        time.Duration `json:"error_ns"`
	Raw          uint16        `json:"raw"`
}

// ConnectPeer is how a connect:// run's handshakes ended that did not
// complete: refused (an RST), timed out (no answer before --timeout), or
// failed otherwise (an ICMP error, no route, no local port).
type ConnectPeer struct {
	Refused  uint64 `json:"refused"`
	TimedOut uint64 `json:"timed_out"`
	Failed   uint64 `json:"failed"`
}

// Socket is the client socket's options as the kernel applied them.
type Socket struct {
	SendBuffer int    `json:"send_buffer"`
	RecvBuffer int    `json:"recv_buffer"`
	TOS        int    `json:"tos"`
	TTL        int    `json:"ttl"`
	DF         bool   `json:"df,omitempty"`
	Congestion string `json:"congestion,omitempty"`
	NoDelay    bool   `json:"nodelay,omitempty"`
	Interface  string `json:"interface,omitempty"`
	Bind       string `json:"bind,omitempty"`
	// Asked lists the socket flags the user gave, as given.
	Asked []string `json:"asked,omitempty"`
}

// TCPConnect is a TCP connection as it opened: how long the connect took,
// and the kernel's initial congestion window, segment size and RTT (the
// "icwnd/mss/irtt" of iperf 2).
type TCPConnect struct {
	ConnectTime time.Duration `json:"connect_ns"`
	Cwnd        uint32        `json:"cwnd"`
	MSS         uint32        `json:"mss"`
	RTT         time.Duration `json:"rtt_ns"`
}

// TCPInterval is the kernel's view of a TCP connection over an interval:
// segments retransmitted in it, and at its end the congestion window and
// the smoothed RTT and its variance (TCP_INFO).
type TCPInterval struct {
	Retransmits uint64        `json:"retransmits"`
	Cwnd        uint32        `json:"cwnd"`
	RTT         time.Duration `json:"rtt_ns"`
	RTTVar      time.Duration `json:"rttvar_ns"`
}

// Grant is what the reflector granted of what the client asked, within
// its limits, and its rate limit per session.
type Grant struct {
	ReplySize int           `json:"reply_size"`
	Hold      time.Duration `json:"hold_ns"`
	MaxRate   float64       `json:"max_rate_pps"`
}

// ThresholdHit says which probe crossed the RTT threshold, and when.
type ThresholdHit struct {
	Seq uint64        `json:"seq"`   // its number among measured probes, from 1
	At  time.Duration `json:"at_ns"` // when its reply came, from the start of measurement
	RTT time.Duration `json:"rtt_ns"`
}

// CPU is the client's process's CPU time over a run (see Result.CPU).
type CPU struct {
	// Seconds is the wall time between the two readings of the CPU time:
	// from the first measured slot until the end of sending was noticed.
	Seconds float64 `json:"seconds"`
	// User and System are the client process's CPU time over it.
	User   float64 `json:"user_seconds"`
	System float64 `json:"system_seconds"`
	// CPUs is how many CPUs the process could run on.
	CPUs int `json:"cpus"`
}

// Used returns how many CPUs the process kept busy on average.
func (c *CPU) Used() float64 {
	if c.Seconds <= 0 {
		return 0
	}
	return (c.User + c.System) / c.Seconds
}

// ClockOffset is the reflector's clock minus the client's, and how it was
// found (Method):
//
//   - "same-clock": the reflector told its clock's identity and it is the
//     client's (same host and boot, no wall-clock step between the two
//     starts; see package clock). Offset is 0 within Bound (the identity's
//     precision), Drift 0, and the summary's up and down delays are
//     measured.
//   - "estimate": the two ends read different clocks (or the reflector did
//     not say which it reads). Offset assumes what Assumes says: that the
//     smallest up and down delays of the run were equal. Whatever the
//     asymmetry, the true offset lies within Bound of it (no delay is
//     negative), unless the clocks stepped during the run. The summary's
//     up and down are then raw clock differences, and EstimatedUp and
//     EstimatedDown are them corrected by Offset: estimates as good as
//     the assumption, each within Bound of the truth.
type ClockOffset struct {
	Method  string        `json:"method"`
	Offset  time.Duration `json:"offset_ns"`
	Bound   time.Duration `json:"bound_ns"`
	Assumes string        `json:"assumes,omitempty"`
	// Drift is how fast the offset moved over the run; nil when the run
	// was too short, or had too few replies, to tell.
	Drift         *Drift   `json:"drift,omitempty"`
	EstimatedUp   *Latency `json:"estimated_up,omitempty"`
	EstimatedDown *Latency `json:"estimated_down,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Drift is the rate at which the reflector's clock gained on the client's,
// in parts per million, within ErrorPPM (a 95% confidence interval's half
// width), fitted over Span of the run (Theil–Sen, over the offset that each
// window's smallest delays give).
type Drift struct {
	PPM      float64       `json:"ppm"`
	ErrorPPM float64       `json:"error_ppm"`
	Span     time.Duration `json:"span_ns"`
	Windows  int           `json:"windows"`
}

// Reconnect is a session lost mid-run and the new one that took over.
type Reconnect struct {
	// At is when the client noticed, from the end of warm-up.
	At time.Duration `json:"at_ns"`
	// Reason: "restarted" (the reflector answered that it does not know
	// the session), "silent" (no reply for the silence timeout) or "gone"
	// (its port unreachable, or its connection closed).
	Reason string `json:"reason"`
	// InFlight is the number of probes outstanding then, declared lost.
	InFlight uint64 `json:"in_flight_lost"`
	// Resumed says whether a new session opened, Gap how long after At.
	Resumed bool          `json:"resumed"`
	Gap     time.Duration `json:"gap_ns"`
}

// Interval is the result of one report interval, or of the whole run.
type Interval struct {
	// Start and End are offsets from the end of warm-up.
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`

	Counts Counts  `json:"counts"`
	RTT    Latency `json:"rtt"`
	// Response is the reflector's response time, T3-T2 less the hold it
	// applied.
	Response   Latency    `json:"response"`
	Up         Latency    `json:"up"`
	Down       Latency    `json:"down"`
	IPDV       IPDV       `json:"ipdv"`
	Throughput Throughput `json:"throughput"`
	// Open-loop runs only: RTT measured from each probe's scheduled send
	// time (a stalled sender cannot hide latency from it), and the send
	// error, actual minus scheduled send time.
	RTTFromSchedule *Latency `json:"rtt_from_schedule,omitempty"`
	SendError       *Latency `json:"send_error,omitempty"`
	// TCP runs of one flow only: TCP_INFO over the interval.
	TCP *TCPInterval `json:"tcp,omitempty"`
	// Kernel holds the figures from kernel (or hardware) stamps, when the
	// run has them (--timestamps).
	Kernel *KernelTimes `json:"kernel,omitempty"`
}

// KernelTimes are the delays measured from kernel (or NIC) stamps instead
// of the tool's own clock readings, and what the stacks and the tool add
// around them. RTT is T4k−T1k; Response T3k−T2k less the hold; Up T2k−T1k
// and Down T4k−T3k (raw: the clock offset is not taken out). SendStack is
// T1k−T1 (from the tool's reading of the clock to the kernel's transmit
// stamp) and RecvStack T4−T4k (from the kernel's receive stamp to the
// tool's reading). Response, Up and Down need the reflector's stamps; Down
// and Response arrive one reply late (see wire.Stamps). LocalQueue is the
// part of SendStack the probe spent in the client's queueing discipline:
// T1k less the kernel's scheduler stamp, taken as the probe entered it
// (SOF_TIMESTAMPING_TX_SCHED); no values where the kernel gives no such
// stamp, or T1k is the NIC's; omitted (zero) in a result read from a
// volley before it or rebuilt from a probe log.
type KernelTimes struct {
	RTT        Latency `json:"rtt"`
	Response   Latency `json:"response"`
	Up         Latency `json:"up"`
	Down       Latency `json:"down"`
	SendStack  Latency `json:"send_stack"`
	RecvStack  Latency `json:"recv_stack"`
	LocalQueue Latency `json:"local_queue,omitzero"`
}

// Timestamps says where a run's times came from.
type Timestamps struct {
	// Asked is the --timestamps mode asked for; Client and Reflector
	// what each end used: "user", "kernel" or "hardware" ("" for a
	// reflector that sent no stamps).
	Asked     string `json:"asked"`
	Client    string `json:"client"`
	Reflector string `json:"reflector,omitempty"`
	// Notes say why an end fell back, and what it used instead.
	Notes []string `json:"notes,omitempty"`
}

// Counts are the probe counts of an interval or of the whole run. An
// interval counts the probes sent in it, and their fate wherever their
// replies came: Sent = Received + Lost + InFlight, and InFlight is 0 but
// in an interval that was reported before all its probes were answered or
// timed out. Lost = LostUp + LostDown. Late replies (arriving after their
// probe was declared lost) stay counted as lost and are listed in Late;
// Duplicates and Reordered count replies, not probes.
//
// Duplicates = DuplicatesUp + DuplicatesDown: a copy made on the way up
// reached the reflector twice and was answered twice (each reply the
// reflector sends has a T3 of its own), one made on the way down is a
// second copy of one reply. A reflector with a key answers a probe once:
// its copies are not seen.
// Reordered counts the replies that came after a reply to a later probe;
// ReorderedUp the probes that reached the reflector after a later probe
// of the session (the reflector says so in the reply), ReorderedDown the
// replies that came after a reply the reflector sent after them (by T3).
// A reordering on the way up can be undone on the way down, and a held
// reply (a workload's holds) comes after later ones without the network
// reordering anything, so the two need not add up to Reordered.
type Counts struct {
	Sent           uint64  `json:"sent"`
	Received       uint64  `json:"received"`
	Lost           uint64  `json:"lost"`
	LostUp         uint64  `json:"lost_up"`
	LostDown       uint64  `json:"lost_down"`
	LossPercent    float64 `json:"loss_percent"`
	Duplicates     uint64  `json:"duplicates"`
	DuplicatesUp   uint64  `json:"duplicates_up"`
	DuplicatesDown uint64  `json:"duplicates_down"`
	Reordered      uint64  `json:"reordered"`
	ReorderedUp    uint64  `json:"reordered_up"`
	ReorderedDown  uint64  `json:"reordered_down"`
	Late           uint64  `json:"late"`
	Errors         uint64  `json:"errors"`
	// InFlight counts the interval's probes neither answered nor declared
	// lost when it was reported: an interval waits for its probes, but a
	// run keeps only so many intervals waiting. They count as received or
	// lost in the summary only. Always 0 in the summary.
	InFlight uint64 `json:"in_flight,omitempty"`
	// Skipped counts the schedule's slots an open-loop sender skipped
	// rather than send in a flood after a stall.
	Skipped uint64 `json:"skipped,omitempty"`
	// Reconnects counts the new sessions opened after a lost one.
	Reconnects uint64 `json:"reconnects,omitempty"`
}

// Add adds o's counts to c. LossPercent is left for the caller to derive.
func (c *Counts) Add(o Counts) {
	c.Sent += o.Sent
	c.Received += o.Received
	c.Lost += o.Lost
	c.LostUp += o.LostUp
	c.LostDown += o.LostDown
	c.Duplicates += o.Duplicates
	c.DuplicatesUp += o.DuplicatesUp
	c.DuplicatesDown += o.DuplicatesDown
	c.Reordered += o.Reordered
	c.ReorderedUp += o.ReorderedUp
	c.ReorderedDown += o.ReorderedDown
	c.InFlight += o.InFlight
	c.Late += o.Late
	c.Errors += o.Errors
	c.Skipped += o.Skipped
	c.Reconnects += o.Reconnects
}

// Latency summarises a distribution of delays. Values below zero (one-way
// delays between hosts whose clocks differ) are kept exactly in Min, Mean
// and Max, and ranked among the others in the percentiles.
type Latency struct {
	Count       int64         `json:"count"`
	Min         time.Duration `json:"min_ns"`
	Mean        time.Duration `json:"mean_ns"`
	Stdev       time.Duration `json:"stdev_ns"`
	Max         time.Duration `json:"max_ns"`
	Percentiles []Percentile  `json:"percentiles"`
}

// Percentile returns l's value at percentile p, if l has it.
func (l Latency) Percentile(p float64) (time.Duration, bool) {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Value, true
		}
	}
	return 0, false
}

// Percentile is one point of a distribution.
type Percentile struct {
	P     float64       `json:"p"`
	Value time.Duration `json:"value_ns"`
}

// IPDV is the IP packet delay variation (RFC 3393) between consecutive
// probes, as absolute values, for the round trip and each direction.
type IPDV struct {
	RTT  Latency `json:"rtt"`
	Up   Latency `json:"up"`
	Down Latency `json:"down"`
}

// Throughput is what crossed the network each way, counting volley's
// payload (UDP/IP headers excluded).
type Throughput struct {
	ProbesPerSecUp   float64 `json:"probes_per_sec_up"`
	ProbesPerSecDown float64 `json:"probes_per_sec_down"`
	BitsPerSecUp     float64 `json:"bits_per_sec_up"`
	BitsPerSecDown   float64 `json:"bits_per_sec_down"`
	// RequestsPerSec is completed exchanges per second of wall time.
	RequestsPerSec float64 `json:"requests_per_sec"`
	// BytesUp and BytesDown are the payload bytes sent and received.
	BytesUp   uint64 `json:"bytes_up"`
	BytesDown uint64 `json:"bytes_down"`
}

// Histogram is a log-binned histogram with an underflow and an overflow
// bucket, or (Width set) bins of that width from zero, iperf 2's way, with
// Outliers counting the values more than three standard deviations above
// the mean.
type Histogram struct {
	Of        string        `json:"of"`
	Total     int64         `json:"total"`
	Underflow Bin           `json:"underflow"`
	Bins      []Bin         `json:"bins"`
	Overflow  Bin           `json:"overflow"`
	Width     time.Duration `json:"width_ns,omitempty"`
	Outliers  int64         `json:"outliers,omitempty"`
}

// Bin counts the values in [Low, High). Underflow has no Low, overflow no
// High (both zero).
type Bin struct {
	Low   time.Duration `json:"low_ns"`
	High  time.Duration `json:"high_ns"`
	Count int64         `json:"count"`
	Share float64       `json:"share"`
}

// Flow is one flow of a parallel run.
type Flow struct {
	LocalAddr      string   `json:"local_addr"`
	Summary        Interval `json:"summary"`
	ReflectorCount string   `json:"reflector_count"`
	Stopped        string   `json:"stopped"`
	Error          string   `json:"error,omitempty"`
}

// WorkloadEntry is one entry of a workload mix, as configured, and what
// its probes measured over the whole run.
type WorkloadEntry struct {
	Name      string        `json:"name"`
	Weight    float64       `json:"weight"`
	Size      int           `json:"size"`
	ReplySize int           `json:"reply_size"`
	Hold      time.Duration `json:"hold_ns"`
	Gap       time.Duration `json:"gap_ns"`
	Sent      uint64        `json:"sent"`
	Received  uint64        `json:"received"`
	Lost      uint64        `json:"lost"`
	RTT       Latency       `json:"rtt"`
	Response  Latency       `json:"response"`
}

// Distribution is the whole run's delays after warm-up, finely enough to
// draw them again from a saved result: RTT, up and down (raw, as the
// summary's) at DistributionLadder's percentiles, and RTT in log-spaced
// bins, ten a decade. One-way runs have Up only.
type Distribution struct {
	RTT          []Percentile `json:"rtt,omitempty"`
	Up           []Percentile `json:"up,omitempty"`
	Down         []Percentile `json:"down,omitempty"`
	RTTHistogram *Histogram   `json:"rtt_histogram,omitempty"`
}

// DistributionLadder is the percentiles of a Distribution: dense in the
// tail, as HdrHistogram's percentile plots are, to 99.999.
var DistributionLadder = []float64{0, 1, 5, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.75, 99.9,
	99.95, 99.975, 99.99, 99.995, 99.999, 100}

// Probe is one measured probe as a plot draws it; it is not part of the
// JSON document. Sent is when it left, from the end of warm-up; RTT, Up
// and Down are its delays (user-space clock readings; Up and Down raw,
// without a clock offset taken out), all zero when Lost. Flow is its flow
// in a parallel run (0 otherwise).
type Probe struct {
	Flow          int
	Sent          time.Duration
	RTT, Up, Down time.Duration
	Lost          bool
}
