// Package tstamp says what a machine's network interfaces can timestamp:
// the kernel's (software) and the NIC's (hardware) receive and transmit
// stamps, the NIC's PTP clock, and which packets its hardware stamps
// (ethtool's timestamping capabilities, SIOCETHTOOL ETHTOOL_GET_TS_INFO,
// and the current setting, SIOCGHWTSTAMP).
package tstamp

// Caps is what one interface can stamp.
type Caps struct {
	Interface string `json:"interface"`
	// Flags are the SOF_TIMESTAMPING_* capabilities, by name
	// ("rx-software", "tx-hardware", "raw-hardware", ...).
	Flags []string `json:"flags"`
	// PHC is the index of the interface's PTP hardware clock, -1 for none.
	PHC int `json:"phc"`
	// TxTypes and RxFilters are the hardware stamping modes offered.
	TxTypes   []string `json:"tx_types"`
	RxFilters []string `json:"rx_filters"`
	// HWConfig is the hardware stamping in force, or why it cannot be read.
	HWConfig string `json:"hw_config"`
}

// Has reports whether c lists flag.
func (c Caps) Has(flag string) bool {
	for _, f := range c.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Software reports whether the kernel stamps this interface's packets both
// ways.
func (c Caps) Software() bool {
	return c.Has("rx-software") && c.Has("tx-software") && c.Has("software")
}

// Hardware reports whether the NIC stamps packets both ways.
func (c Caps) Hardware() bool {
	return c.Has("rx-hardware") && c.Has("tx-hardware") && c.Has("raw-hardware")
}

func names(bits uint32, table []string) []string {
	var out []string
	for i, n := range table {
		if bits&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

var flagNames = []string{"tx-hardware", "tx-software", "rx-hardware", "rx-software", "software", "sys-hardware", "raw-hardware",
	"opt-id", "tx-sched", "tx-ack", "opt-cmsg", "opt-tsonly", "opt-stats", "opt-pktinfo", "opt-tx-swhw", "bind-phc", "opt-id-tcp"}

var txTypeNames = []string{"off", "on", "onestep-sync", "onestep-p2p"}

var rxFilterNames = []string{"none", "all", "some", "ptpv1-l4-event", "ptpv1-l4-sync", "ptpv1-l4-delay-req",
	"ptpv2-l4-event", "ptpv2-l4-sync", "ptpv2-l4-delay-req", "ptpv2-l2-event", "ptpv2-l2-sync", "ptpv2-l2-delay-req",
	"ptpv2-event", "ptpv2-sync", "ptpv2-delay-req", "ntp-all"}
