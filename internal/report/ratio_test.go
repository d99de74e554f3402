package report

import "testing"

// TestRatio: a comparison's ratios keep three significant digits, so a
// run a hundred times faster does not show 0.00×.
func TestRatio(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want string
	}{
		{100e3 / 41.9e6, "0.00239"},
		{1.5, "1.50"},
		{123.4, "123"},
		{12.34, "12.3"},
		{12345.6, "12346"},
		{0.5, "0.500"},
		{9.996, "10.0"},
		{0.09996, "0.100"},
		{0, "0"},
	} {
		if got := ratio(tt.x); got != tt.want {
			t.Errorf("ratio(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}
