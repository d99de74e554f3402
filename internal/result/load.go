package result

import "time"

// Load is a latency-under-load run (--load): probes through an idle phase,
// a phase with bulk TCP streams moving data, and an idle phase again; what
// each phase measured, what the load added, and a responsiveness score.
type Load struct {
	// Direction is what the bulk streams did in the loaded phase: "down"
	// (the reflector sent), "up" (the client sent) or "both".
	Direction string `json:"direction"`
	// Streams is the number of bulk streams each loaded direction ran.
	Streams int `json:"streams"`
	// Phase is each phase's length.
	Phase time.Duration `json:"phase_ns"`
	// Phases in order: "idle", "loaded", "idle-after".
	Phases []Phase `json:"phases"`
	// Responsiveness is the loaded phase's score; nil when it had no
	// replies.
	Responsiveness *Responsiveness `json:"responsiveness,omitempty"`
	// Series is the bulk streams' goodput over the run, a point every
	// SeriesStep (the plot's throughput panel).
	SeriesStep time.Duration `json:"series_step_ns"`
	Series     []LoadPoint   `json:"series"`
	// Errors says what went wrong with the bulk streams (a refusal, a
	// stream cut short), each once; the probes' figures stand.
	Errors []string `json:"errors,omitempty"`
}

// Phase is one phase of a latency-under-load run.
type Phase struct {
	Name   string `json:"name"`
	Loaded bool   `json:"loaded"`
	// Probes is what the probes sent in the phase measured: counts, loss
	// each way, RTT and one-way delays (Start and End as an Interval's).
	Probes Interval `json:"probes"`
	// Goodput of the bulk streams over the phase: bytes the client
	// received (down) and bytes the reflector's kernel acknowledged (up),
	// and their rates.
	BytesUp        uint64  `json:"bytes_up"`
	BytesDown      uint64  `json:"bytes_down"`
	BitsPerSecUp   float64 `json:"bits_per_sec_up"`
	BitsPerSecDown float64 `json:"bits_per_sec_down"`
	// Streams is how many bulk streams ran in the phase (granted).
	Streams int `json:"streams"`
	// Added is the delay the load added: this phase's percentiles less
	// the first idle phase's (every phase but the first).
	Added *Added `json:"added,omitempty"`
}

// Added is the delay a phase added to the first idle phase's, percentile by
// percentile (a value may be negative), for the round trip and each
// direction, and the mean of each (trimmed as Responsiveness's).
type Added struct {
	RTT  []Percentile `json:"rtt"`
	Up   []Percentile `json:"up,omitempty"`
	Down []Percentile `json:"down,omitempty"`
	// Queue says in which direction the delay grew: "up", "down",
	// "both", "none", or "" when the peer's answers carry no one-way
	// delays (see Responsiveness.Queue's threshold in docs/load.md).
	Queue string `json:"queue"`
}

// Responsiveness is the score of draft-ietf-ippm-responsiveness (Draft
// names the version): round trips per minute under working conditions,
// 60 s over the trimmed mean of the loaded phase's round trips (the mean of
// all but the slowest 5 %), with the raw delays it came from.
type Responsiveness struct {
	Draft string `json:"draft"`
	// RPM is the loaded phase's score; IdleRPM the first idle phase's,
	// from the same formula.
	RPM     float64 `json:"rpm"`
	IdleRPM float64 `json:"idle_rpm"`
	// TrimmedMean is the loaded phase's trimmed mean RTT, from Samples
	// round trips; TrimmedUp and TrimmedDown each direction's (raw, as
	// the one-way delays are), when the peer's answers carry them.
	TrimmedMean time.Duration `json:"trimmed_mean_ns"`
	TrimmedUp   time.Duration `json:"trimmed_up_ns,omitempty"`
	TrimmedDown time.Duration `json:"trimmed_down_ns,omitempty"`
	Samples     int64         `json:"samples"`
	// Queue is the loaded phase's Added.Queue: where the queue built.
	Queue string `json:"queue"`
}

// LoadPoint is the bulk streams' goodput over one step of a load series,
// which ends At (from the start of the measurement: a --load run has no
// warm-up).
type LoadPoint struct {
	At             time.Duration `json:"at_ns"`
	BitsPerSecUp   float64       `json:"bits_per_sec_up"`
	BitsPerSecDown float64       `json:"bits_per_sec_down"`
}
