package transport

import (
	"context"
	"errors"
	"testing"

	"github.com/volley-net/volley/internal/sockopt"
)

// TestGranted: Granted reads back what the kernel applied to a UDP or TCP
// client's socket, through the SyscallConn capability, and is
// errors.ErrUnsupported for the Unix sockets.
func TestGranted(t *testing.T) {
	tests := []struct {
		name    string
		listen  func(t *testing.T) (PacketConn, Target)
		opts    DialOptions
		want    func(g sockopt.Granted) bool
		wantErr error
	}{
		{"udp", listenAt("udp", "127.0.0.1:0"), DialOptions{Socket: sockopt.Options{TOS: 0x28, TTL: 9, DF: true}},
			func(g sockopt.Granted) bool {
				return g.TOS == 0x28 && g.TTL == 9 && g.DF && g.SendBuffer > 0 && g.RecvBuffer > 0
			}, nil},
		{"tcp", listenAt("tcp", "127.0.0.1:0"), DialOptions{Socket: sockopt.Options{TOS: 0x10, TTL: 7}},
			func(g sockopt.Granted) bool { return g.TOS == 0x10 && g.TTL == 7 && g.NoDelay && g.Congestion != "" }, nil},
		{"tcp, Nagle on", listenAt("tcp", "127.0.0.1:0"), DialOptions{Socket: sockopt.Options{TOS: -1, NoDelayOff: true}},
			func(g sockopt.Granted) bool { return !g.NoDelay }, nil},
		{"unix", listenAt("unix", ""), DialOptions{Socket: sockopt.Options{TOS: -1}}, nil, errors.ErrUnsupported},
		{"unixgram", listenAt("unixgram", ""), DialOptions{Socket: sockopt.Options{TOS: -1}}, nil, errors.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, target := tt.listen(t)
			defer l.Close()
			c, err := DialWith(context.Background(), target, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g, err := Granted(c)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Granted(%s) = %+v, %v, want error %v", target, g, err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.want(g) {
				t.Fatalf("Granted(%s) = %+v, %v, want what %+v asked", target, g, err, tt.opts.Socket)
			}
		})
	}
}
