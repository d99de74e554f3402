package reflector

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/volley-net/volley/internal/probelog"
	"github.com/volley-net/volley/internal/wire"
)

// TestStampsFollowUp: with kernel stamps, a reply with room carries the
// probe's kernel receive time and the session's oldest transmit stamp not
// yet carried, one per reply; a reply without room carries none, and says
// so by its flags. Each reply sent is accounted: its response times, and
// a log line.
func TestStampsFollowUp(t *testing.T) {
	r, clk := newTest(t)
	r.stamps = &stamper{}       // as Serve makes for a socket with stamps on
	r.resp = newResponses(true) // as New makes with Config.Stamps
	var log bytes.Buffer
	lw, err := probelog.NewWriter(&log, LogHeader)
	if err != nil {
		t.Fatal(err)
	}
	r.log = probelog.NewBuffer(lw)
	addr := netip.MustParseAddrPort("192.0.2.1:5000")
	token := handshake(t, r, clk, addr)
	var last sentReply // the reply to the last probe
	probe := func(seq uint64, size int) (wire.Header, wire.Stamps, bool) {
		t.Helper()
		o := r.handle(msg(t, wire.Header{Type: wire.TypeProbe, Flags: wire.FlagStamps, Token: token, Nonce: 99, Seq: seq}, size), arrival{addr: addr, t2: clk.Now(), t2k: int64(1000 + seq)})
		if !o.replied || o.rep.seq != seq || o.rep.t2k != int64(1000+seq) {
			t.Fatalf("probe %d: last reply %+v", seq, o.rep)
		}
		last = o.rep
		st, ok := wire.StampsOf(o.reply)
		return decode(t, o.reply), st, ok
	}
	// The first reply has nothing to follow up.
	if _, st, ok := probe(1, 100); !ok || st != (wire.Stamps{T2K: 1001}) {
		t.Fatalf("reply 1 stamps %+v, %v; want T2K 1001 alone", st, ok)
	}
	r.replied(&last, 5001) // its transmit stamp came back
	// Two replies leave before their stamps come back: the next replies
	// carry them one each, oldest first.
	if _, st, _ := probe(2, 100); st.PrevSeq != 1 || st.PrevT3K != 5001 || st.T2K != 1002 {
		t.Fatalf("reply 2 stamps %+v, want reply 1's T3K", st)
	}
	two := last
	_, _, _ = probe(3, 100)
	three := last
	r.replied(&two, 5002)
	r.replied(&three, 5003)
	if _, st, _ := probe(4, 100); st.PrevSeq != 2 || st.PrevT3K != 5002 {
		t.Fatalf("reply 4 stamps %+v, want reply 2's", st)
	}
	// A reply too small for the block has none, and no flag.
	if h, _, ok := probe(5, wire.HeaderLen); ok || h.Flags&wire.FlagStamps != 0 {
		t.Fatalf("a 64-byte reply: flags %v, block %v; want neither", h.Flags, ok)
	}
	if _, st, _ := probe(6, 100); st.PrevSeq != 3 || st.PrevT3K != 5003 {
		t.Fatalf("reply 6 stamps %+v, want reply 3's", st)
	}
	// The Close asks for what is owed: reply 4's and 6's stamps, which
	// come back now, ride on the CloseAck.
	four, six := last, last
	four.seq = 4
	r.replied(&four, 5004)
	r.replied(&six, 5006)
	// A Close with room for the follow-ups, as a client's.
	closeMsg := msg(t, wire.Header{Type: wire.TypeClose, Flags: wire.FlagStamps, Token: token, Nonce: 99}, wire.CloseStampsLen)
	closeAck := r.Handle(closeMsg, addr, clk.Now())
	if h := decode(t, closeAck); h.Type != wire.TypeCloseAck || h.Flags&wire.FlagStamps == 0 {
		t.Fatalf("CloseAck %+v, want FlagStamps", h)
	}
	var got []uint64
	wire.FollowUps(closeAck[wire.HeaderLen:], func(seq uint64, t3k int64) { got = append(got, seq, uint64(t3k)) })
	if fmt.Sprint(got) != "[4 5004 6 5006]" {
		t.Errorf("CloseAck follow-ups %v, want [4 5004 6 5006]", got)
	}
	if n := r.resp.total.Count() - 2; n != 3 {
		t.Errorf("%d replies accounted, want the 3 whose stamps came", n)
	}
	if n := r.resp.totalK.Count() - 2; n != 3 {
		t.Errorf("%d kernel response times, want 3", n)
	}
	r.log.Flush()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 6 || lines[0]+"\n" != LogHeader || !strings.Contains(lines[1], ",1,") || !strings.HasSuffix(lines[1], ",4000") {
		t.Errorf("log:\n%s\nwant the header and a line per reply accounted, reply 1's kernel response 5001-1001", log.String())
	}
}
