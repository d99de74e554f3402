// Package dbus is volley's D-Bus transport: volley's messages travel as
// byte arrays through a message bus (dbus-daemon), as dping and dpong's do.
//
// The reflector claims a well-known name (DefaultName unless told
// otherwise) and exports an object at Path with the interface Interface:
//
//	<interface name="net.volley.Reflector1">
//	  <method name="Probe"><arg type="ay" direction="in"/><arg type="ay" direction="out"/></method>
//	  <method name="Open"><arg type="ay" direction="in"/><arg type="ay" direction="out"/></method>
//	  <method name="Close"><arg type="ay" direction="in"/><arg type="ay" direction="out"/></method>
//	  <signal name="OneWay"><arg type="ay"/></signal>
//	</interface>
//
// Probe returns its argument: a volley probe comes back as the reflector's
// reply (its times, count and size filled in), and anything else as it
// was, so that dbus-send can try it. Open takes a client's Hello and
// returns the session's cookie; Close ends the session and returns its
// results. One-way probes go out as OneWay signals addressed to the
// reflector (fire-and-forget, as dping's): a signal asks for no reply, so
// the bus carries one message per probe, as for dping, where a method call
// flagged no-reply-expected would do the same but is not what dping
// measures.
//
// The object also has org.freedesktop.DBus.Introspectable and
// org.freedesktop.DBus.Peer (Ping, and GetMachineId, which answers the
// host's /var/lib/dbus/machine-id or /etc/machine-id), and so have "/",
// "/net" and "/net/volley", whose introspection data name the next path
// down: busctl tree and gdbus introspect --recurse find the reflector by
// walking from "/".
//
// Only this package imports github.com/godbus/dbus/v5.
package dbus

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	godbus "github.com/godbus/dbus/v5"
)

// The reflector's name, object and interface on the bus.
const (
	DefaultName = "net.volley.Reflector"
	Path        = godbus.ObjectPath("/net/volley/Reflector")
	Interface   = "net.volley.Reflector1"
)

// MaxMessage is the largest message volley sends through a bus (dbus-daemon
// takes up to 128 MiB on the session bus and 32 MiB on the system bus).
const MaxMessage = 4 << 20

// Address resolves a bus as the user names it: "session", "system", or a
// D-Bus address such as "unix:path=/tmp/bus".
func Address(bus string) (string, error) {
	switch bus {
	case "session":
		a := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
		if a == "" {
			return "", errors.New("no session bus: DBUS_SESSION_BUS_ADDRESS is not set")
		}
		return a, nil
	case "system":
		if a := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); a != "" {
			return a, nil
		}
		return "unix:path=/var/run/dbus/system_bus_socket", nil
	case "":
		return "", errors.New("no bus named (want session, system or a D-Bus address)")
	}
	if !strings.Contains(bus, ":") {
		return "", fmt.Errorf("bus %q: want session, system or a D-Bus address such as unix:path=/run/bus", bus)
	}
	return bus, nil
}

// Addr is an end of a D-Bus connection: the bus and a name on it.
type Addr struct {
	Bus  string // as the user named it
	Name string // well-known or unique
}

// Network returns "dbus".
func (a Addr) Network() string { return "dbus" }

// String returns the bus and the name, such as "session/net.volley.Reflector".
func (a Addr) String() string { return a.Bus + "/" + a.Name }

var _ net.Addr = Addr{}
