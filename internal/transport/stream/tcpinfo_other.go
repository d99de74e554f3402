//go:build !linux

package stream

import "errors"

// TCPInfo is Linux's.
func (c *Conn) TCPInfo() (TCPInfo, error) { return TCPInfo{}, errors.ErrUnsupported }
