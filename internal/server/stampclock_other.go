//go:build !linux

package server

import "github.com/volley-net/volley/internal/stamp"

// clockError is the smallest error estimate, not synchronized: the
// system does not say its clock's.
func clockError() stamp.ErrorEstimate { return stamp.NewErrorEstimate(false, 0) }
