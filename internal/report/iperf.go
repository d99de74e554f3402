package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/volley-net/volley/internal/result"
)

// The iperf format prints a run the way iperf 2's bounceback client does
// (seed 003), so that its users read the same quantities in the same
// places: per interval the transfer both ways, the bandwidth, the
// exchanges' RTT count=avg/min/max/stdev, TCP retransmits and cwnd/RTT,
// and requests per second (from the mean RTT, as iperf 2's RPS(avg)); at
// the end the RTT histogram in 100µs bins with its 5/95/99.7% points and
// the outliers (more than three standard deviations above the mean). As
// in iperf 2, bin k holds the values in [(k-1)×100µs, k×100µs), so 21µs is
// in bin 1, and the points are given as bins.

// WriteIperfHeader writes the lines iperf 2's bounceback client starts with.
func WriteIperfHeader(w io.Writer, c result.Config) error {
	var b strings.Builder
	reply := c.Granted.ReplySize
	if reply == 0 {
		reply = c.Size
	}
	fmt.Fprintf(&b, "Bounceback test (req/reply size = %s/ %s) (server hold req=%d usecs)\n", iperfBytes(c.Size), iperfBytes(reply), c.Granted.Hold/time.Microsecond)
	if c.Burst > 0 {
		fmt.Fprintf(&b, "Bursting request %d times every %.2f second(s)\n", c.Burst, c.Period.Seconds())
	}
	if so := c.Socket; so != nil {
		if so.Congestion != "" {
			fmt.Fprintf(&b, "TCP congestion control using %s\n", so.Congestion)
		}
		nagle := "Nagle on"
		if so.NoDelay {
			nagle = "nodelay (Nagle off)"
		}
		fmt.Fprintf(&b, "TOS set to %#x and %s\n", so.TOS, nagle)
	}
	fmt.Fprintf(&b, "[  1] local %s connected with %s", c.LocalAddr, runName(c))
	if t := c.TCP; t != nil {
		fmt.Fprintf(&b, " (icwnd/mss/irtt=%d/%d/%d) (ct=%.2f ms)", t.Cwnd, t.MSS, t.RTT/time.Microsecond, float64(t.ConnectTime)/1e6)
	}
	b.WriteString("\n[ ID] Interval        Transfer    Bandwidth         BB cnt=avg/min/max/stdev         Rtry  Cwnd/RTT    RPS(avg)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteIperfInterval writes one interval as iperf 2's bounceback line; mss
// is the TCP segment size (0 when not TCP).
func WriteIperfInterval(w io.Writer, iv result.Interval, mss uint32) error {
	_, err := io.WriteString(w, iperfLine(iv, mss)+"\n")
	return err
}

func iperfLine(iv result.Interval, mss uint32) string {
	tp := iv.Throughput
	bytes := float64(tp.BytesUp + tp.BytesDown)
	secs := (iv.End - iv.Start).Seconds()
	bw := 0.0
	if secs > 0 {
		bw = 8 * bytes / secs
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	r := iv.RTT
	line := fmt.Sprintf("[  1] %.2f-%.2f sec  %ss  %ss/sec  %d=%.3f/%.3f/%.3f/%.3f ms",
		iv.Start.Seconds(), iv.End.Seconds(), iperfAdaptive(bytes, 1024, byteUnits), iperfAdaptive(bw, 1000, bitUnits),
		r.Count, ms(r.Mean), ms(r.Min), ms(r.Max), ms(r.Stdev))
	if t := iv.TCP; t != nil {
		line += fmt.Sprintf("  %4d  %4dK/%d us", t.Retransmits, uint64(t.Cwnd)*uint64(mss)/1024, t.RTT/time.Microsecond)
	}
	if r.Mean > 0 {
		line += fmt.Sprintf("  %6.0f rps", 1e9/float64(r.Mean))
	}
	return line
}

// WriteIperfSummary writes the whole run's line and, when the result has
// one, the histogram with its 5/95/99.7% points and outliers, in bins.
func WriteIperfSummary(w io.Writer, res *result.Result) error {
	var mss uint32
	if res.Config.TCP != nil {
		mss = res.Config.TCP.MSS
	}
	var b strings.Builder
	b.WriteString(iperfLine(res.Summary, mss) + "\n")
	if h := res.Histogram; h != nil && h.Width > 0 {
		fmt.Fprintf(&b, "[  1] %.2f-%.2f sec  BB8(f)-PDF: bin(w=%s):cnt(%d)=", res.Summary.Start.Seconds(), res.Summary.End.Seconds(), Duration(h.Width), h.Total)
		var cells []string
		for i, bin := range h.Bins {
			if bin.Count > 0 {
				cells = append(cells, fmt.Sprintf("%d:%d", i+1, bin.Count))
			}
		}
		b.WriteString(strings.Join(cells, ","))
		var pts []string
		var heads []string
		for _, q := range res.Summary.RTT.Percentiles {
			heads = append(heads, fmt.Sprintf("%.2f", q.P))
			pts = append(pts, fmt.Sprint(int64(q.Value/h.Width)+1))
		}
		fmt.Fprintf(&b, "\n(%s%%=%s,Outliers=%d,obl/obu=0/0)\n", strings.Join(heads, "/"), strings.Join(pts, "/"), h.Outliers)
	}
	if res.Stopped != "" {
		if why, ok := stopReasons[res.Stopped]; ok {
			fmt.Fprintf(&b, "(ended: %s; sent %d, received %d, lost %d)\n", why, res.Summary.Counts.Sent, res.Summary.Counts.Received, res.Summary.Counts.Lost)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// iperfBytes writes a size as iperf 2 does: "100 Byte", "512 KByte".
func iperfBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MByte", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KByte", n>>10)
	}
	return fmt.Sprintf("%d Byte", n)
}

var (
	byteUnits = [...]string{"Byte", "KByte", "MByte", "GByte", "TByte"}
	bitUnits  = [...]string{"bit", "Kbit", "Mbit", "Gbit", "Tbit"}
)

// iperfAdaptive writes v as iperf 2's adaptive formats do ('a' for bits
// per second, 'A' for bytes): divided by base (1000 for bits, 1024 for
// bytes) while it is base or more, up to T, and printed in four places:
// 0.123, 1.23, 12.3, 123 (or 1000 to 1023 bytes). So 2000 bytes over a
// second are "1.95 KByte" and "16.0 Kbit".
func iperfAdaptive(v, base float64, units [5]string) string {
	u := 0
	for v >= base && u < len(units)-1 {
		v /= base
		u++
	}
	switch {
	case v < 0.9995:
		return fmt.Sprintf("%4.3f %s", v, units[u])
	case v < 9.995:
		return fmt.Sprintf("%4.2f %s", v, units[u])
	case v < 99.95:
		return fmt.Sprintf("%4.1f %s", v, units[u])
	}
	return fmt.Sprintf("%4.0f %s", v, units[u])
}
