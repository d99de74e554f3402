package tstamp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Query asks the kernel what iface can stamp.
func Query(iface string) (Caps, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Caps{}, err
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolTsInfo(fd, iface)
	if err != nil {
		return Caps{}, fmt.Errorf("%s: ethtool timestamping info: %w", iface, err)
	}
	c := Caps{
		Interface: iface,
		Flags:     names(info.So_timestamping, flagNames),
		PHC:       int(info.Phc_index),
		TxTypes:   names(info.Tx_types, txTypeNames),
		RxFilters: names(info.Rx_filters, rxFilterNames),
	}
	if hw, err := unix.IoctlGetHwTstamp(fd, iface); err != nil {
		c.HWConfig = fmt.Sprintf("cannot be read (SIOCGHWTSTAMP: %v)", err)
	} else {
		tx, rx := fmt.Sprint(hw.Tx_type), fmt.Sprint(hw.Rx_filter)
		if int(hw.Tx_type) < len(txTypeNames) && hw.Tx_type >= 0 {
			tx = txTypeNames[hw.Tx_type]
		}
		if int(hw.Rx_filter) < len(rxFilterNames) && hw.Rx_filter >= 0 {
			rx = rxFilterNames[hw.Rx_filter]
		}
		c.HWConfig = fmt.Sprintf("tx %s, rx %s", tx, rx)
	}
	return c, nil
}
