//go:build !linux

package udp

import (
	"errors"
	"time"
)

// Busy polling is Linux's: without a batcher, SetBusyPoll refuses it.

func (b *batcher) setBusyPoll(bool) error { return errors.ErrUnsupported }
func (b *batcher) setDeadline(time.Time)  {}

func (c *Conn) write(b []byte) (int, error) { return c.UDPConn.Write(b) }

func (b *batcher) read1(p []byte) (int, error) { return 0, errors.ErrUnsupported }

func (b *batcher) setWriteDeadline(time.Time) {}
