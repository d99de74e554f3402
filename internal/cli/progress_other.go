//go:build !linux

package cli

import "io"

// ttyOf finds no terminal off Linux: no progress line is drawn there.
func ttyOf(io.Writer) (terminal, bool) { return nil, false }
