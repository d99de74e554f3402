//go:build !unix

package unixgram

import "errors"

// SetBlockingReads refuses here: waiting in the kernel out of the poller
// is Linux's.
func (p *PacketConn) SetBlockingReads(on bool) error {
	if !on {
		return nil
	}
	return errors.ErrUnsupported
}

func (br *blockReader) read([]byte) (int, string, error) { return 0, "", errors.ErrUnsupported }
