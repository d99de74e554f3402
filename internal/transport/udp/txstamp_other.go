//go:build !linux

package udp

import (
	"errors"

	"github.com/volley-net/volley/internal/tstamp"
)

// Kernel stamps are Linux's: EnableTimestamps refuses them, and no
// transmit stamp ever waits.

func (b *batcher) enableStamps(bool, bool) error              { return errors.ErrUnsupported }
func (b *batcher) nextTxID() uint32                           { return 0 }
func (b *batcher) readTxStamps([]tstamp.TxStamp) (int, error) { return 0, nil }
func (p *PacketConn) countSent()                              {}
func (b *batcher) sampleSched(uint32) error                   { return nil }
func (b *batcher) schedSampled() uint32                       { return 0 }
