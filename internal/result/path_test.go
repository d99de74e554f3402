package result

import "testing"

// TestInferInitialTTL: the smallest usual initial TTL not below the one
// seen.
func TestInferInitialTTL(t *testing.T) {
	for _, c := range []struct{ ttl, want int }{{1, 64}, {63, 64}, {64, 64}, {65, 128}, {115, 128}, {128, 128}, {129, 255}, {255, 255}} {
		if got := InferInitialTTL(c.ttl); got != c.want {
			t.Errorf("InferInitialTTL(%d) = %d, want %d", c.ttl, got, c.want)
		}
	}
}

// TestMarkOf: the traffic class byte splits into DSCP and ECN.
func TestMarkOf(t *testing.T) {
	if got, want := MarkOf(63, 0xb9), (PathMark{TTL: 63, DSCP: 46, ECN: ECT1}); got != want {
		t.Errorf("MarkOf(63, 0xb9) = %+v, want %+v", got, want)
	}
}
