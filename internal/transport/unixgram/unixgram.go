// Package unixgram is volley's Unix datagram transport. A client binds an
// abstract address of its own (Linux) so that the reflector can answer
// it; the reflector names each peer it hears from with an address in
// fd76:6c01::/32 standing for the peer's socket address, so that its
// sessions and cookies work as they do over UDP. It remembers at most
// maxPeers peers.
package unixgram

import (
	"container/list"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volley-net/volley/internal/clock"
	"github.com/volley-net/volley/internal/kwait"
)

// MaxMessage is the largest message volley sends over a Unix datagram
// socket: UDP's, so that a run moves between the two unchanged.
const MaxMessage = 65000

// bufferSize is the socket buffer asked for each way.
const bufferSize = 4 << 20

// Dial opens a Unix datagram socket bound to a fresh abstract address and
// connected to path.
func Dial(path string) (*Conn, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	laddr := &net.UnixAddr{Name: "@volley-" + hex.EncodeToString(b[:]), Net: "unixgram"}
	c, err := net.DialUnix("unixgram", laddr, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(bufferSize)
	_ = c.SetWriteBuffer(bufferSize)
	return &Conn{UnixConn: c}, nil
}

// PacketConn is a reflector's Unix datagram socket.
type PacketConn struct {
	c    *net.UnixConn
	path string
	file os.FileInfo // the socket file Listen made; nil: none (abstract)

	mu    sync.Mutex
	ids   map[string]netip.AddrPort // peer socket address → its stand-in
	peers map[netip.AddrPort]*list.Element
	lru   list.List // of *peer, the most recently heard first
	max   int
	next  uint64

	sender sender // see send
	// block: ReadFrom waits in the kernel (SetBlockingReads); nil: in
	// the poller.
	block     atomic.Pointer[blockReader]
	reader    *blockReader // block's when set; kept while in the poller (SetBlockingReads' goroutine's)
	rdeadline atomic.Int64 // the read deadline set, clock.Deadline (0: none)
}

type peer struct {
	addr  *net.UnixAddr
	stand netip.AddrPort
	sa    any // its address for a raw send, made once (see send)
}

// maxPeers bounds the peers remembered; beyond it, the one heard from
// least recently is forgotten (its session's replies then cannot reach it).
const maxPeers = 1 << 14

// Listen opens a Unix datagram socket at path, which must be free (see
// transport.ListenUnixgram for a stale file). Close removes the file it
// made, and only that one.
func Listen(path string) (*PacketConn, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(bufferSize)
	_ = c.SetWriteBuffer(bufferSize)
	p := &PacketConn{c: c, path: path, ids: make(map[string]netip.AddrPort), peers: make(map[netip.AddrPort]*list.Element), max: maxPeers}
	if fi, err := os.Lstat(path); err == nil && !strings.HasPrefix(path, "@") {
		p.file = fi
	}
	return p, nil
}

// ReadFrom reads one datagram and returns its length and its sender's
// stand-in address. A datagram from an unbound socket, which cannot be
// answered, comes from the zero address.
func (p *PacketConn) ReadFrom(b []byte) (int, netip.AddrPort, error) {
	if br := p.block.Load(); br != nil {
		n, from, err := br.read(b)
		if err != nil || from == "" {
			return n, netip.AddrPort{}, err
		}
		return n, p.id(&net.UnixAddr{Name: from, Net: "unixgram"}), nil
	}
	n, from, err := p.c.ReadFromUnix(b)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	if from == nil || from.Name == "" {
		return n, netip.AddrPort{}, nil
	}
	return n, p.id(from), nil
}

// id returns the stand-in address of the peer at from.
func (p *PacketConn) id(from *net.UnixAddr) netip.AddrPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.ids[from.Name]; ok {
		p.lru.MoveToFront(p.peers[a])
		return a
	}
	for len(p.peers) >= p.max {
		old := p.lru.Remove(p.lru.Back()).(*peer)
		delete(p.peers, old.stand)
		delete(p.ids, old.addr.Name)
	}
	p.next++
	// fd76:6c01:NNNN:NNNN:NNNN:NNNN:: with the peer's number N: each
	// peer a /64 of its own, so a source of its own for the reflector's
	// per-source limits (a datagram does not say which user sent it).
	var ip [16]byte
	ip[0], ip[1], ip[2], ip[3] = 0xfd, 0x76, 0x6c, 0x01
	binary.BigEndian.PutUint64(ip[4:], p.next)
	a := netip.AddrPortFrom(netip.AddrFrom16(ip), 0)
	p.ids[from.Name] = a
	p.peers[a] = p.lru.PushFront(&peer{addr: from, stand: a})
	return a
}

// errNoPeer: WriteTo was given an address that stands for no peer.
var errNoPeer = errors.New("unixgram: no peer with that address")

// ErrSlowReader: the peer's socket is full, it does not read its
// replies; the reply is dropped rather than waited for.
var ErrSlowReader = errors.New("unixgram: the peer does not read its replies")

// WriteTo sends b to the peer addr stands for. It never waits: a peer
// whose socket is full (it does not read) makes every sender to it wait
// otherwise, the reflector's other peers included.
func (p *PacketConn) WriteTo(b []byte, addr netip.AddrPort) (int, error) {
	p.mu.Lock()
	e := p.peers[addr]
	p.mu.Unlock()
	if e == nil {
		return 0, errNoPeer
	}
	return p.send(b, e.Value.(*peer))
}

// SetReadDeadline sets the deadline for ReadFrom.
func (p *PacketConn) SetReadDeadline(t time.Time) error {
	p.rdeadline.Store(clock.Deadline(t))
	if br := p.block.Load(); br != nil && !t.IsZero() && !t.After(time.Now()) {
		br.ks.Wake() // an interrupt: the blocked read ends now
	}
	return p.c.SetReadDeadline(t)
}

// LocalAddr returns the socket's address.
func (p *PacketConn) LocalAddr() net.Addr { return p.c.LocalAddr() }

// MaxMessage returns the largest message the socket carries.
func (p *PacketConn) MaxMessage() int { return MaxMessage }

// Close removes the socket's file, unless another has taken its place
// (same device and inode), and closes the socket. The file goes first:
// while the socket is bound, nothing that checks before replacing a socket
// file (as transport.ListenUnixgram does) takes the path.
func (p *PacketConn) Close() error {
	if p.file != nil {
		if fi, err := os.Lstat(p.path); err == nil && os.SameFile(fi, p.file) {
			_ = os.Remove(p.path)
		}
	}
	if br := p.block.Load(); br != nil {
		br.closing.Store(true)
		kwait.Shutdown(br.rc) // wakes the read at once
	}
	return p.c.Close()
}
