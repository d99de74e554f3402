//go:build !linux

package tstamp

import "errors"

// Query is Linux's.
func Query(iface string) (Caps, error) { return Caps{}, errors.ErrUnsupported }
