package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/volley-net/volley/internal/client"
	"github.com/volley-net/volley/internal/foreign"
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/sockopt"
	"github.com/volley-net/volley/internal/transport"
)

// TestSTAMPForeignSender: volley's own STAMP Session-Sender (package
// foreign, through client.Run) against the STAMP listener, in both
// modes: every probe answered, the TTL echoed, and a stateful listener's
// numbering read as no loss either way.
func TestSTAMPForeignSender(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		var key []byte
		if keyed {
			key = []byte("a shared key")
		}
		ss, err := Open(context.Background(), Setup{Listen: "127.0.0.1:0", Workers: 1, UDP: sockopt.Options{TOS: -1}, STAMP: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := ss.Serve(ctx, Config{Reflector: reflector.Config{ReportInterval: -1}, STAMP: STAMPConfig{Key: key}}, make(intervals, 1))
			done <- err
		}()
		c, err := transport.Dial(context.Background(), transport.Target{Scheme: "udp", Host: "127.0.0.1", Port: ss.STAMP.LocalAddr().(*net.UDPAddr).Port})
		if err != nil {
			t.Fatal(err)
		}
		s := foreign.NewSTAMP(c, foreign.STAMPConfig{Key: key, Stateful: true, SSID: 5})
		res, err := client.Run(context.Background(), client.Config{Rate: 500, Count: 200, Timeout: time.Second, ReportInterval: -1}, s)
		c.Close()
		cancel()
		if serr := <-done; serr != nil {
			t.Errorf("Serve: %v", serr)
		}
		ss.Close()
		if err != nil {
			t.Fatalf("keyed %v: %v", keyed, err)
		}
		cnt, p, said := res.Summary.Counts, res.Config.Peer, res.PeerResults
		if cnt.Sent != 200 || cnt.Received != 200 || cnt.LostUp != 0 || cnt.LostDown != 0 {
			t.Errorf("keyed %v: counts %+v", keyed, cnt)
		}
		if p == nil || p.STAMP == nil || !p.Directions || said == nil || said.STAMP == nil || said.STAMP.SenderTTL != 64 {
			t.Errorf("keyed %v: peer %+v, said %+v", keyed, p, said)
		}
	}
}
