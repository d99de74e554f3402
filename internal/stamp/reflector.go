package stamp

import (
	"errors"
	"net/netip"
	"sync"
)

// ErrFull is Reflect's error for a stateful reflector's new session when
// its table holds MaxSessions sessions, none idle: the request is dropped.
var ErrFull = errors.New("stamp: session table full")

// Defaults of a ReflectorConfig's zero fields.
const (
	DefaultMaxSessions = 1024
	DefaultIdle        = int64(60 * nsPerSec)
)

// ReflectorConfig is how a Reflector answers.
type ReflectorConfig struct {
	// Key is the HMAC key of authenticated mode; nil: unauthenticated.
	Key []byte
	// Stateful: number the replies of each session with the reflector's
	// own count (RFC 8762 §4.2), which tells the sender which way its
	// probes were lost. Stateless: copy the sender's sequence number.
	Stateful bool
	// Err is the error estimate of the reflector's clock, sent in every
	// reply.
	Err ErrorEstimate
	// MaxSessions bounds a stateful reflector's table of sessions
	// (DefaultMaxSessions when 0).
	MaxSessions int
	// Idle is how long, in ns, a session may stay silent before its
	// place in the table may go to another (DefaultIdle when 0).
	Idle int64
}

// Reflector is a STAMP Session-Reflector: it turns Session-Sender packets
// into their replies. It is safe for concurrent use.
type Reflector struct {
	cfg ReflectorConfig
	mu  sync.Mutex
	tab *table // nil when stateless
}

// NewReflector returns a Reflector answering as cfg says. A stateful one
// allocates its table of sessions here, once.
func NewReflector(cfg ReflectorConfig) *Reflector {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	r := &Reflector{cfg: cfg}
	if cfg.Stateful {
		r.tab = newTable(cfg.MaxSessions)
	}
	return r
}

// Reflect turns the Session-Sender packet b[:n], received from from at t2
// (ns since 1970) with IP TTL or hop limit ttl, into its reply in place,
// and returns the reply's length m: always n (a reply is never larger
// than its request, RFC 8972 §4; nor smaller, as RFC 8762 keeps the sizes
// symmetric). t3 is the transmit time written in the reply: the caller
// reads its clock just before Reflect and sends b[:m] right after. The
// TLVs after the base packet are answered as RFC 8972 §4 says (see
// ReflectTLVs).
//
// Its errors (ErrShort, ErrAuth, ErrFull) are why a request was dropped:
// with an error, b[:n] is left as a request (or partly rewritten) and
// must not be sent.
func (r *Reflector) Reflect(b []byte, n int, from netip.AddrPort, t2, t3 int64, ttl uint8) (int, error) {
	n = min(max(n, 0), len(b))
	b = b[:n]
	s, err := ParseSender(b, r.cfg.Key)
	if err != nil {
		return 0, err
	}
	seq := s.Seq
	if r.tab != nil {
		r.mu.Lock()
		seq, err = r.tab.next(sessionKey{from, s.SSID}, t2, r.cfg.Idle)
		r.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	base := BaseLength(r.cfg.Key)
	ReflectTLVs(b[base:])
	reply := Reflected{
		Seq:       seq,
		T3:        FromUnixNano(t3),
		Err:       r.cfg.Err,
		SSID:      s.SSID,
		T2:        FromUnixNano(t2),
		SenderSeq: s.Seq,
		SenderT1:  s.T1,
		SenderErr: s.Err,
		SenderTTL: ttl,
	}
	if err := PutReflected(b, &reply, r.cfg.Key); err != nil {
		return 0, err
	}
	return n, nil
}

// Sessions returns the number of sessions a stateful reflector's table
// holds (idle ones until their place is taken), 0 for a stateless one.
func (r *Reflector) Sessions() int {
	if r.tab == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tab.index)
}

// sessionKey is what tells a stateful reflector's sessions apart: the
// sender's address and port, and its SSID (RFC 8972 §3).
type sessionKey struct {
	from netip.AddrPort
	ssid uint16
}

// table is a stateful reflector's sessions: a fixed array of slots
// allocated once, a map from key to slot made with room for all of them,
// and a list of the slots from the most recently heard to the least, so
// that the least recently heard is the one a new session may take when
// it has been idle long enough.
//
// A new session when every slot is taken and none is idle is dropped
// (ErrFull), not answered statelessly: a stateless answer would carry the
// sender's own sequence number, which the sender would read as "nothing
// lost on the way up", a silent lie, while a drop is a loss it sees and
// the reflector counts.
type table struct {
	slots []slot
	index map[sessionKey]int32
	used  int32 // slots ever taken: [0, used) are in the list
	head  int32 // most recently heard, -1 when empty
	tail  int32 // least recently heard
}

// slot is one session: its key, the next sequence number, when it was
// last heard, and its neighbours in the list.
type slot struct {
	key        sessionKey
	seq        uint32
	last       int64
	prev, next int32
}

func newTable(n int) *table {
	return &table{
		slots: make([]slot, n),
		index: make(map[sessionKey]int32, n),
		head:  -1,
		tail:  -1,
	}
}

// next returns the sequence number of the reply to a packet of session k
// heard at now, counting it; a new session takes a free slot or the least
// recently heard one if it has been idle longer than idle.
func (t *table) next(k sessionKey, now, idle int64) (uint32, error) {
	i, ok := t.index[k]
	if !ok {
		switch {
		case int(t.used) < len(t.slots):
			i = t.used
			t.used++
		case now-t.slots[t.tail].last > idle:
			i = t.tail
			t.unlink(i)
			delete(t.index, t.slots[i].key)
		default:
			return 0, ErrFull
		}
		t.slots[i] = slot{key: k, prev: -1, next: -1}
		t.index[k] = i
	} else {
		t.unlink(i)
	}
	s := &t.slots[i]
	s.last = now
	seq := s.seq
	s.seq++
	t.pushFront(i)
	return seq, nil
}

// unlink takes slot i out of the list.
func (t *table) unlink(i int32) {
	s := &t.slots[i]
	if s.prev >= 0 {
		t.slots[s.prev].next = s.next
	} else {
		t.head = s.next
	}
	if s.next >= 0 {
		t.slots[s.next].prev = s.prev
	} else {
		t.tail = s.prev
	}
	s.prev, s.next = -1, -1
}

// pushFront puts slot i at the head of the list.
func (t *table) pushFront(i int32) {
	s := &t.slots[i]
	s.prev, s.next = -1, t.head
	if t.head >= 0 {
		t.slots[t.head].prev = i
	} else {
		t.tail = i
	}
	t.head = i
}
