package cli

import (
	"github.com/volley-net/volley/internal/reflector"
	"github.com/volley-net/volley/internal/report"
)

// reflectorCounts copies a reflector's counters into the report's form.
func reflectorCounts(s reflector.Stats) report.ReflectorCounts {
	drops := make([]report.Drop, len(s.Drops))
	for r, n := range s.Drops {
		drops[r] = report.Drop{Reason: reflector.DropReason(r).String(), Count: n}
	}
	return report.ReflectorCounts{Elapsed: s.Elapsed, PacketsIn: s.PacketsIn, PacketsOut: s.PacketsOut,
		BytesIn: s.BytesIn, BytesOut: s.BytesOut, SendErrors: s.SendErrors, Duplicates: s.Duplicates,
		Sessions: s.Sessions, SessionsOpened: s.SessionsOpened, Drops: drops,
		Response: s.Response, ResponseKernel: s.ResponseKernel}
}
