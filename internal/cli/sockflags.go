package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/sockopt"
)

// The range of --buffer: the kernel grants at least about 2K whatever is
// asked, and a size past 1G would overflow the int the kernel doubles.
const (
	minBuffer = 1 << 10
	maxBuffer = 1 << 30
)

// checkSocketFlags checks the socket flags the client and the server
// share, those given: --tos (0 to 255), --ttl (1 to 255), --buffer and
// --congestion.
func checkSocketFlags(cmd *cobra.Command, tos, ttl int, buffer byteSize, congestion string) error {
	changed := cmd.Flags().Changed
	switch {
	case changed("tos") && (tos < 0 || tos > 255):
		return usagef("--tos %d: want 0 to 255", tos)
	case changed("ttl") && (ttl < 1 || ttl > 255):
		return usagef("--ttl %d: want 1 to 255", ttl)
	case changed("buffer") && (buffer < minBuffer || buffer > maxBuffer):
		return usagef("--buffer %s: want %s to %s bytes", buffer, byteSize(minBuffer), byteSize(maxBuffer))
	case congestion != "" && !slices.Contains(sockopt.Available(), congestion):
		return usagef("--congestion %s: not available here (available: %s)", congestion, strings.Join(sockopt.Available(), ", "))
	}
	return nil
}
