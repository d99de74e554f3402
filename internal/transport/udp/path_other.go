//go:build !linux

package udp

import "errors"

// A datagram's TTL and traffic class come with Linux's recvmmsg:
// EnablePath refuses elsewhere.

func (b *batcher) enablePath() error { return errors.ErrUnsupported }
