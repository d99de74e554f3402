package cli

import (
	"slices"
	"strings"

	"github.com/volley-net/volley/internal/transport/sockopt"
)

// checkSocketFlags checks the socket flags the client and the server
// share: --tos (-1: not given), --ttl (0: not given) and --congestion.
func checkSocketFlags(tos, ttl int, congestion string) error {
	switch {
	case tos < -1 || tos > 255:
		return usagef("--tos %d: want 0 to 255", tos)
	case ttl < 0 || ttl > 255:
		return usagef("--ttl %d: want 1 to 255", ttl)
	case congestion != "" && !slices.Contains(sockopt.Available(), congestion):
		return usagef("--congestion %s: not available here (available: %s)", congestion, strings.Join(sockopt.Available(), ", "))
	}
	return nil
}
