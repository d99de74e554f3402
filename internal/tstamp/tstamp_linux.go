package tstamp

import (
	"fmt"
	"net"
	"net/netip"
	"unsafe"

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

// The stamping a socket asks for: software stamps both ways, transmit
// stamps numbered by datagram (OPT_ID) and returned without their packet
// (OPT_TSONLY), so that the error queue holds little; with hw, the NIC's
// raw stamps too.
const (
	swFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	hwFlags = unix.SOF_TIMESTAMPING_RX_HARDWARE | unix.SOF_TIMESTAMPING_TX_HARDWARE | unix.SOF_TIMESTAMPING_RAW_HARDWARE
)

// Enable turns on kernel stamps (and with hw the NIC's) for the socket fd.
// The IDs of transmit stamps count from 0 at this call. A socket whose
// transmit stamps are on must have its error queue read (ParseTx), or
// the stamps use up its receive buffer.
func Enable(fd int, hw bool) error { return enable(fd, hw, 0) }

// EnableSched is Enable plus the scheduler's transmit stamp
// (SOF_TIMESTAMPING_TX_SCHED): each datagram sent then has two on the
// error queue, one as it enters the queueing discipline (TxStamp.Sched)
// and one as it leaves for the wire, so that the time it spent queued
// on this host can be told apart from the rest of the stack's. Where the
// kernel refuses the scheduler's stamp, it turns on Enable's alone;
// sched says which.
func EnableSched(fd int, hw bool) (sched bool, err error) {
	if enable(fd, hw, unix.SOF_TIMESTAMPING_TX_SCHED) == nil {
		return true, nil
	}
	return false, enable(fd, hw, 0)
}

// SchedRequestLen is the room PutSchedRequest needs.
func SchedRequestLen() int { return unix.CmsgSpace(4) }

// PutSchedRequest writes into b (SchedRequestLen bytes or more) the
// control message that asks the kernel for the scheduler's stamp of the
// one datagram it goes with, beside Enable's transmit stamps (and with
// hw the NIC's). Stamping flags given per datagram replace the socket's
// transmit flags for that datagram (SO_TIMESTAMPING as a control
// message, Linux 4.7 and later); its options (OPT_ID, OPT_TSONLY) stay
// the socket's. Linux routes a datagram that carries a control message
// without the connected socket's cached route: a lookup of its own,
// part of its send stack.
func PutSchedRequest(b []byte, hw bool) {
	flags := uint32(unix.SOF_TIMESTAMPING_TX_SCHED | unix.SOF_TIMESTAMPING_TX_SOFTWARE)
	if hw {
		flags |= unix.SOF_TIMESTAMPING_TX_HARDWARE
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPING
	h.SetLen(unix.CmsgLen(4))
	*(*uint32)(unsafe.Pointer(&b[unix.CmsgLen(0)])) = flags
}

func enable(fd int, hw bool, extra int) error {
	flags := swFlags | extra
	if hw {
		flags |= hwFlags
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); err != nil {
		return fmt.Errorf("SO_TIMESTAMPING: %w", err)
	}
	return nil
}

// RxControlLen and TxControlLen are the control buffers a received
// datagram's stamps (and its TTL and traffic class: 112 bytes in all) and
// an error-queue entry need (with room to spare).
const (
	RxControlLen = 192
	TxControlLen = 256
)

const timespecLen = int(unsafe.Sizeof(unix.Timespec{}))

// Cmsgs walks the control messages in oob and calls f with each one's
// level, type and data. It does not allocate.
func Cmsgs(oob []byte, f func(level, typ int32, data []byte)) { cmsgs(oob, f) }

// cmsgs is Cmsgs.
func cmsgs(oob []byte, f func(level, typ int32, data []byte)) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return
		}
		f(h.Level, h.Type, oob[unix.SizeofCmsghdr:l])
		next := unix.CmsgSpace(l - unix.SizeofCmsghdr)
		if next > len(oob) {
			return
		}
		oob = oob[next:]
	}
}

// stamps reads an SCM_TIMESTAMPING payload: three timespecs, the software
// stamp, a legacy one, and the raw hardware stamp.
func stamps(data []byte) Stamp {
	if len(data) < 3*timespecLen {
		return Stamp{}
	}
	ts := (*[3]unix.Timespec)(unsafe.Pointer(&data[0]))
	return Stamp{SW: ts[0].Nano(), HW: ts[2].Nano()}
}

// ParseRx returns the stamps in a received datagram's control messages.
func ParseRx(oob []byte) Stamp {
	var s Stamp
	cmsgs(oob, func(level, typ int32, data []byte) {
		if level == unix.SOL_SOCKET && typ == unix.SO_TIMESTAMPING {
			s = stamps(data)
		}
	})
	return s
}

// ParseTx reads an error-queue entry's control messages; ok is false when
// it is not a transmit stamp of a sent datagram (an ICMP error, or a stamp
// of another kind: an acknowledgment's). A scheduler stamp has Sched set,
// and only a software stamp.
func ParseTx(oob []byte) (st TxStamp, ok bool) {
	var s Stamp
	var ee *unix.SockExtendedErr
	cmsgs(oob, func(level, typ int32, data []byte) {
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SO_TIMESTAMPING:
			s = stamps(data)
		case (level == unix.SOL_IP && typ == unix.IP_RECVERR) || (level == unix.SOL_IPV6 && typ == unix.IPV6_RECVERR):
			if len(data) >= int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				ee = (*unix.SockExtendedErr)(unsafe.Pointer(&data[0]))
			}
		}
	})
	if ee == nil || ee.Errno != uint32(unix.ENOMSG) || ee.Origin != unix.SO_EE_ORIGIN_TIMESTAMPING ||
		(ee.Info != unix.SCM_TSTAMP_SND && ee.Info != unix.SCM_TSTAMP_SCHED) || (s.SW == 0 && s.HW == 0) {
		return TxStamp{}, false
	}
	return TxStamp{ID: ee.Data, Sched: ee.Info == unix.SCM_TSTAMP_SCHED, Stamp: s}, true
}

// PrepareHardware makes iface stamp in hardware: it checks that the NIC
// can (ethtool's capabilities), and turns its stamping on for all packets
// both ways (SIOCSHWTSTAMP) unless it is on already. The error names what
// is missing. This changes the interface for every program on the machine
// (a PTP daemon sets the same), so callers do it only when the user asked
// for hardware stamps.
func PrepareHardware(iface string) error {
	c, err := Query(iface)
	if err != nil {
		return err
	}
	if !c.Hardware() {
		return fmt.Errorf("%s cannot stamp in hardware (its timestamping capabilities: %v)", iface, c.Flags)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if cur, err := unix.IoctlGetHwTstamp(fd, iface); err == nil && cur.Tx_type == unix.HWTSTAMP_TX_ON && cur.Rx_filter == unix.HWTSTAMP_FILTER_ALL {
		return nil
	}
	cfg := unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_ALL}
	if err := unix.IoctlSetHwTstamp(fd, iface, &cfg); err != nil {
		return fmt.Errorf("%s: turning hardware stamping on (SIOCSHWTSTAMP, needs CAP_NET_ADMIN): %w", iface, err)
	}
	return nil
}

// InterfaceOf returns the name of the interface that holds the local
// address addr.
func InterfaceOf(addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		as, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr.Unmap() {
					return i.Name, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s", addr)
}
