package units

import (
	"errors"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "100": 100, "1K": 1024, "1k": 1024, "512K": 512 << 10, "10M": 10 << 20, "2G": 2 << 30} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "K", "1.5K", "-1", "1KB", "x", "99999999999G"} {
		if got, err := ParseBytes(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseBytes(%q) = %d, %v, want ErrSyntax", bad, got, err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 1500: "1500", 1024: "1K", 10 << 20: "10M", 4 << 30: "4G", 1536: "1536"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
		if back, err := ParseBytes(FormatBytes(in)); err != nil || back != in {
			t.Errorf("ParseBytes(FormatBytes(%d)) = %d, %v", in, back, err)
		}
	}
}

func TestRate(t *testing.T) {
	for in, want := range map[string]float64{"2500": 2500, "100k": 1e5, "1.5K": 1500, "2M": 2e6, "0.5": 0.5} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "10x", "inf", "NaN", "0x10"} {
		if got, err := ParseRate(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseRate(%q) = %v, %v, want ErrSyntax", bad, got, err)
		}
	}
	for in, want := range map[float64]string{2e6: "2M", 1e6: "1M", 2.5e6: "2.5M", 1500: "1.5k", 250: "250", 0.5: "0.5", 0: "0"} {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		bare bool
		want time.Duration
		ok   bool
	}{
		{"2", true, 2 * time.Second, true},
		{"0.5", true, 500 * time.Millisecond, true},
		{"0", true, 0, true},
		{"2s", true, 2 * time.Second, true},
		{"10us", true, 10 * time.Microsecond, true},
		{"2", false, 0, false},
		{"250ms", false, 250 * time.Millisecond, true},
		{"inf", true, 0, false},
		{"1e300", true, 0, false},
		{"soon", true, 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in, tt.bare)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q, %v) = %v, %v, want %v (ok %v)", tt.in, tt.bare, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{0: "0", time.Second: "1s", 2 * time.Minute: "2m", time.Hour: "1h", 90 * time.Second: "1m30s", 30 * time.Second: "30s", 250 * time.Microsecond: "250µs"} {
		if got := FormatDuration(in); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestBitRate(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "8000": 8000, "8k": 8e3, "100M": 100e6, "100m": 100e6, "1G": 1e9, "1.5g": 1.5e9, "1000G": 1e12} {
		if got, err := ParseBitRate(in); err != nil || got != want {
			t.Errorf("ParseBitRate(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1", "-1G", "10x", "1T", "inf", "NaN", "0x10", "1_000"} {
		if got, err := ParseBitRate(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseBitRate(%q) = %v, %v, want ErrSyntax", bad, got, err)
		}
	}
	for in, want := range map[float64]string{1e9: "1G", 1e12: "1000G", 2.5e6: "2.5M", 8e3: "8k", 500: "500", 0: "0"} {
		if got := FormatBitRate(in); got != want {
			t.Errorf("FormatBitRate(%v) = %q, want %q", in, got, want)
		}
		if back, err := ParseBitRate(FormatBitRate(in)); err != nil || back != in {
			t.Errorf("ParseBitRate(FormatBitRate(%v)) = %v, %v", in, back, err)
		}
	}
	// Probe rates keep to k and M: G is no suffix of theirs.
	if _, err := ParseRate("1G"); !errors.Is(err, ErrSyntax) {
		t.Errorf("ParseRate(1G) = %v, want ErrSyntax", err)
	}
}
