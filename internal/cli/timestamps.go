package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volley-net/volley/internal/tstamp"
)

func newTimestampsCmd(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "timestamps [IFACE]",
		Short: "Show what each network interface can timestamp (kernel and hardware)",
		Long: `Show what the kernel and the NIC can timestamp on each network interface (or
on IFACE): the SO_TIMESTAMPING capabilities (rx/tx software and hardware
stamps), the PTP hardware clock, the hardware stamping modes offered
(transmit types and receive filters), and the hardware stamping in force.
This is what ethtool -T reports.

Kernel stamps ("software") need rx-software, tx-software and software;
hardware stamps need rx-hardware, tx-hardware and raw-hardware, and the
NIC's stamping turned on (SIOCSHWTSTAMP).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ifaces []string
			if len(args) == 1 {
				ifaces = args
			} else {
				all, err := net.Interfaces()
				if err != nil {
					return err
				}
				for _, i := range all {
					ifaces = append(ifaces, i.Name)
				}
			}
			var caps []tstamp.Caps
			for _, name := range ifaces {
				c, err := tstamp.Query(name)
				if errors.Is(err, errors.ErrUnsupported) {
					return fmt.Errorf("timestamping capabilities: %w on this system", err)
				}
				if err != nil {
					if len(args) == 1 {
						return usagef("%v", err)
					}
					fmt.Fprintf(stdout, "%s: %v\n", name, err)
					continue
				}
				caps = append(caps, c)
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(caps)
			}
			for _, c := range caps {
				kernel, hw := "no", "no"
				if c.Software() {
					kernel = "yes"
				}
				if c.Hardware() {
					hw = "yes"
				}
				phc := "none"
				if c.PHC >= 0 {
					phc = fmt.Sprintf("/dev/ptp%d", c.PHC)
				}
				fmt.Fprintf(stdout, "%s: kernel stamps %s, hardware stamps %s, PTP clock %s\n", c.Interface, kernel, hw, phc)
				fmt.Fprintf(stdout, "  capabilities: %s\n", orNone(c.Flags))
				fmt.Fprintf(stdout, "  hardware tx types: %s; rx filters: %s; in force: %s\n", orNone(c.TxTypes), orNone(c.RxFilters), c.HWConfig)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
