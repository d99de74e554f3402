//go:build !linux

package udp

import (
	"errors"
	"net/netip"
)

// Blocking reads are Linux's: without a batcher, SetBlockingReads refuses
// them.

func (b *batcher) setBlocking(bool) error { return errors.ErrUnsupported }

func (b *batcher) read(ms []Message) (int, error) { return 0, errors.ErrUnsupported }

func (b *batcher) writeTo([]byte, netip.AddrPort) (int, error) { return 0, errors.ErrUnsupported }

func (b *batcher) markClosing() {}

func (b *batcher) outOfPoller() bool { return false }
