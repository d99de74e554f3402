// Command soakload holds many sessions open against a volley reflector at a
// modest rate each, for bench/soak.sh. A volley client flow is an OS thread
// with its own histograms (a few megabytes), so a thousand of them starve a
// 2-core machine before the reflector feels anything; soakload is one
// goroutine and one socket per session, and counts only what it sent, what
// came back and what the reflector counted at the close. It measures no
// latency: the soak is about the reflector's memory, goroutines and CPU.
//
//	go run ./bench/soakload -target 127.0.0.1:7766 -sessions 1000 -rate 10 -duration 10m
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/wire"
)

func main() {
	target := flag.String("target", "127.0.0.1:7766", "reflector address, host:port")
	sessions := flag.Int("sessions", 1000, "sessions to hold open, each its own socket")
	rate := flag.Float64("rate", 10, "probes/s per session")
	duration := flag.Duration("duration", 10*time.Minute, "how long to send")
	size := flag.Int("size", 64, "probe size in bytes")
	flag.Parse()
	if *sessions < 1 || *rate <= 0 || *duration <= 0 || *size < wire.HeaderLen || *size > 65000 {
		fmt.Fprintln(os.Stderr, "soakload: want -sessions ≥ 1, -rate and -duration > 0, -size from 64 to 65000")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	var tot totals
	var wg sync.WaitGroup
	gap := time.Duration(float64(time.Second) / *rate)
	for i := range *sessions {
		wg.Go(func() {
			// Spread the sessions' first probes over one gap.
			time.Sleep(gap * time.Duration(i) / time.Duration(*sessions))
			if err := session(ctx, *target, gap, *size, &tot); err != nil {
				tot.failed.Add(1)
				if tot.failed.Load() <= 5 {
					fmt.Fprintf(os.Stderr, "soakload: session %d: %v\n", i+1, err)
				}
			}
		})
	}
	wg.Wait()
	sent, recv, counted := tot.sent.Load(), tot.received.Load(), tot.counted.Load()
	fmt.Printf("sessions %d opened, %d closed, %d failed; sent %d, received %d, lost %d (%.3f%%); the reflector counted %d\n",
		tot.opened.Load(), tot.closed.Load(), tot.failed.Load(), sent, recv, sent-recv, 100*float64(sent-recv)/float64(max(sent, 1)), counted)
	if tot.failed.Load() > 0 {
		os.Exit(1)
	}
}

type totals struct {
	opened, closed, failed  atomic.Int64
	sent, received, counted atomic.Uint64
}

// session opens a session, sends a probe every gap until ctx is done, and
// closes it. Replies are read by a second goroutine, so a lost one does not
// hold up the schedule.
func session(ctx context.Context, target string, gap time.Duration, size int, tot *totals) error {
	conn, err := net.Dial("udp", target)
	if err != nil {
		return err
	}
	defer conn.Close()
	var nb [8]byte
	_, _ = rand.Read(nb[:])
	nonce := binary.BigEndian.Uint64(nb[:])
	buf := make([]byte, size)
	rbuf := make([]byte, 65536)

	token, err := handshake(conn, buf, rbuf, nonce)
	if err != nil {
		return err
	}
	tot.opened.Add(1)

	var acked atomic.Uint64 // the reflector's count in its CloseAck
	closed := make(chan struct{})
	go readReplies(conn, rbuf, token, tot, &acked, closed)

	t := time.NewTicker(gap)
	defer t.Stop()
	h := wire.Header{Type: wire.TypeProbe, Token: token, Nonce: nonce}
	for seq := uint64(1); ; seq++ {
		select {
		case <-ctx.Done():
			return closeSession(conn, buf, token, nonce, closed, &acked, tot)
		case <-t.C:
		}
		h.Seq, h.T1 = seq, time.Now().UnixNano()
		_ = h.Encode(buf)
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		tot.sent.Add(1)
	}
}

// handshake sends a Hello as large as the probes (buf) until a Cookie
// answers, up to 5 times a second apart, and returns the session's token.
func handshake(conn net.Conn, buf, rbuf []byte, nonce uint64) (uint64, error) {
	var token uint64
	for try := 0; try < 5 && token == 0; try++ {
		h := wire.Header{Type: wire.TypeHello, Seq: nonce, T1: time.Now().UnixNano()}
		_ = h.Encode(buf)
		if _, err := conn.Write(buf); err != nil {
			return 0, err
		}
		conn.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := conn.Read(rbuf)
			if err != nil {
				break
			}
			var in wire.Header
			if in.Decode(rbuf[:n]) == nil && in.Seq == nonce {
				if in.Type == wire.TypeError {
					return 0, fmt.Errorf("refused: %s", in.Code)
				}
				if in.Type == wire.TypeCookie {
					token = in.Token
					break
				}
			}
		}
	}
	if token == 0 {
		return 0, errors.New("no cookie after 5 Hellos")
	}
	return token, nil
}

// readReplies counts the session's replies until its CloseAck, whose
// count it stores in acked before closing closed, or until conn is closed.
func readReplies(conn net.Conn, rbuf []byte, token uint64, tot *totals, acked *atomic.Uint64, closed chan<- struct{}) {
	conn.SetReadDeadline(time.Time{})
	for {
		n, err := conn.Read(rbuf)
		if err != nil {
			return
		}
		var in wire.Header
		if in.Decode(rbuf[:n]) != nil || in.Token != token {
			continue
		}
		switch in.Type {
		case wire.TypeReply:
			tot.received.Add(1)
		case wire.TypeCloseAck:
			acked.Store(in.Received)
			close(closed)
			return
		}
	}
}

// closeSession sends Closes until the CloseAck comes, a second apart.
func closeSession(conn net.Conn, buf []byte, token, nonce uint64, closed chan struct{}, acked *atomic.Uint64, tot *totals) error {
	time.Sleep(200 * time.Millisecond) // the last replies
	h := wire.Header{Type: wire.TypeClose, Token: token, Nonce: nonce}
	for try := uint64(1); try <= 3; try++ {
		h.Seq, h.T1 = try, time.Now().UnixNano()
		_ = h.Encode(buf[:wire.HeaderLen])
		if _, err := conn.Write(buf[:wire.HeaderLen]); err != nil {
			return err
		}
		select {
		case <-closed:
			tot.closed.Add(1)
			tot.counted.Add(acked.Load())
			return nil
		case <-time.After(time.Second):
		}
	}
	return errors.New("no close ack after 3 tries")
}
