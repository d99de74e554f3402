package tstamp

import (
	"slices"
	"testing"
)

// TestQueryLoopback: the kernel stamps loopback's packets in software.
func TestQueryLoopback(t *testing.T) {
	c, err := Query("lo")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has("rx-software") || !c.Has("software") || c.Hardware() || c.HWConfig == "" {
		t.Fatalf("lo: %+v, want software rx stamps, no hardware ones, and what the hardware setting says", c)
	}
	if _, err := Query("no-such-if0"); err == nil {
		t.Fatal("Query of a missing interface succeeded")
	}
}

func TestNames(t *testing.T) {
	if got := names(0b1001, flagNames); !slices.Equal(got, []string{"tx-hardware", "rx-software"}) {
		t.Fatalf("names(0b1001) = %v", got)
	}
}
