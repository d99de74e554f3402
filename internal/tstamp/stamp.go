package tstamp

// Stamp is when the kernel (SW) or the NIC (HW) saw a packet, in Unix
// nanoseconds; 0 where there is none.
type Stamp struct {
	SW, HW int64
}

// Best returns the hardware stamp when there is one, else the software one.
func (s Stamp) Best() int64 {
	if s.HW != 0 {
		return s.HW
	}
	return s.SW
}

// TxStamp is a transmit stamp of the ID-th datagram sent on a socket
// since its stamping was turned on (SOF_TIMESTAMPING_OPT_ID), counting
// from 0. Sched marks the scheduler's stamp (SCM_TSTAMP_SCHED, taken as
// the datagram entered the interface's queueing discipline, only on a
// socket that asked for it: EnableSched); without it the stamp is the one
// taken as the datagram left for the wire (SCM_TSTAMP_SND), after the
// queue. One datagram can have both, in two error-queue entries with the
// same ID.
type TxStamp struct {
	ID    uint32
	Sched bool
	Stamp
}

// Mode is the source of the probes' times a user asks for.
type Mode int

// The modes.
const (
	Auto     Mode = iota // kernel stamps where the socket has them, else user
	User                 // the tool's own clock readings only
	Kernel               // the kernel's software stamps (SO_TIMESTAMPING)
	Hardware             // the NIC's stamps; an error where there are none
)

var modeNames = [...]string{"auto", "user", "kernel", "hardware"}

// String names the mode as the --timestamps flag does.
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// ParseMode reads a --timestamps value.
func ParseMode(s string) (Mode, bool) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), true
		}
	}
	return 0, false
}
