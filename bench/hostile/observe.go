package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStatus returns VmRSS and VmHWM of pid in kB; ok is false once the
// process has exited (a zombie has neither).
func procStatus(pid int) (rss, hwm int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, _ = strconv.ParseInt(f[1], 10, 64)
			ok = true
		case "VmHWM:":
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return rss, hwm, ok
}

// exited reports whether pid has exited: gone, or a zombie.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// watch samples a process's memory and descriptors until it exits (or
// SIGINT, SIGTERM, -limit) and prints the peaks.
func watch(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "the process to watch")
	every := fs.Duration("every", 50*time.Millisecond, "how often to sample")
	limit := fs.Duration("limit", 30*time.Minute, "the longest to watch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid <= 0 || *every <= 0 {
		return usagef("want -pid of a process and -every above 0")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	var peakRSS, peakFDs, samples int64
	fdDir := fmt.Sprintf("/proc/%d/fd", *pid)
	for ctx.Err() == nil {
		rss, hwm, ok := procStatus(*pid)
		if !ok {
			break
		}
		peakRSS = max(peakRSS, rss, hwm)
		if d, err := os.Open(fdDir); err == nil {
			names, _ := d.Readdirnames(-1)
			d.Close()
			peakFDs = max(peakFDs, int64(len(names)))
		}
		samples++
		select {
		case <-ctx.Done():
		case <-time.After(*every):
		}
	}
	fmt.Printf("peak_kb %d peak_fds %d samples %d\n", peakRSS, peakFDs, samples)
	return nil
}

// term sends SIGTERM to a process and prints the seconds until it has
// exited, or ">MAX" after SIGKILL when it has not within -max.
func term(args []string) error {
	fs := flag.NewFlagSet("term", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "the process to stop")
	most := fs.Duration("max", 5*time.Second, "SIGKILL it after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pid <= 0 || *most <= 0 {
		return usagef("want -pid of a process and -max above 0")
	}
	if exited(*pid) {
		fmt.Println("gone")
		return nil
	}
	start := time.Now()
	if err := syscall.Kill(*pid, syscall.SIGTERM); err != nil {
		return err
	}
	for !exited(*pid) {
		if time.Since(start) > *most {
			_ = syscall.Kill(*pid, syscall.SIGKILL)
			fmt.Printf(">%.1f\n", most.Seconds())
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
	return nil
}

// clientResult is what legit reads of a volley client's JSON result.
type clientResult struct {
	Stopped string `json:"stopped"`
	Summary struct {
		Counts struct {
			Sent     int64 `json:"sent"`
			Received int64 `json:"received"`
			Lost     int64 `json:"lost"`
		} `json:"counts"`
		RTT struct {
			Count       int64 `json:"count"`
			Percentiles []struct {
				P       float64 `json:"p"`
				ValueNs int64   `json:"value_ns"`
			} `json:"percentiles"`
		} `json:"rtt"`
	} `json:"summary"`
}

// legit reads a volley client's --format json result and prints
// "LOST/EXPECTED/P99NS": the probes lost, counting those never sent
// because the run ended early (or never started: no result at all), out of
// rate × duration, and the RTT's p99 ("-" without replies).
func legit(args []string) error {
	fs := flag.NewFlagSet("legit", flag.ContinueOnError)
	rate := fs.Float64("rate", 1000, "the client's --rate")
	dur := fs.Duration("duration", 3*time.Second, "the client's -t")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one FILE")
	}
	expected := int64(math.Round(*rate * dur.Seconds()))
	b, _ := os.ReadFile(fs.Arg(0))
	var r clientResult
	if len(bytes.TrimSpace(b)) == 0 || json.Unmarshal(b, &r) != nil {
		fmt.Printf("%d/%d/-\n", expected, expected)
		return nil
	}
	c := r.Summary.Counts
	lost := c.Lost
	if r.Stopped != "duration" && r.Stopped != "count" {
		lost += max(0, expected-c.Sent)
	}
	p99 := "-"
	if r.Summary.RTT.Count > 0 {
		for _, p := range r.Summary.RTT.Percentiles {
			if p.P == 99 {
				p99 = strconv.FormatInt(p.ValueNs, 10)
			}
		}
	}
	fmt.Printf("%d/%d/%s\n", lost, expected, p99)
	return nil
}

// phase is one legit cell: lost/expected/p99ns.
type phase struct {
	ok       bool // the cell was measured
	lost     int64
	expected int64
	p99      float64 // ns; NaN: no replies
}

func parsePhase(s string) phase {
	f := strings.Split(s, "/")
	if len(f) != 3 {
		return phase{}
	}
	p := phase{ok: true, p99: math.NaN()}
	p.lost, _ = strconv.ParseInt(f[0], 10, 64)
	p.expected, _ = strconv.ParseInt(f[1], 10, 64)
	if v, err := strconv.ParseFloat(f[2], 64); err == nil {
		p.p99 = v
	}
	return p
}

// report prints the table of the rows bench/hostile.sh gathered, one per
// attack (tab-separated: name, spoofable 0/1, UDP before/during/after,
// TCP before/during/after as lost/expected/p99ns, peak RSS kB, peak fds,
// largest bytes out/in, seconds to exit), the first row the unattacked
// baseline, with a verdict per target.
func report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var lim reportLimits
	fs.Int64Var(&lim.rssMB, "rss-mb", 128, "peak RSS target, MiB")
	fs.Float64Var(&lim.exitS, "exit-s", 1, "exit target after SIGTERM, seconds")
	fs.Float64Var(&lim.p99Factor, "p99-factor", 2, "p99 target: this many times the unattacked p99")
	fs.Float64Var(&lim.ratio, "ratio", 2, "bytes out/in target for addresses the attacker can spoof")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one FILE")
	}
	rows, err := readRows(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Printf("%-19s %-14s %-20s %-14s %-20s %8s %5s %7s %6s | %-4s %-4s %-4s %-4s %-5s %s\n",
		"attack", "UDP lost b/d/a", "UDP p99 ms b/d/a", "TCP lost b/d/a", "TCP p99 ms b/d/a", "peak RSS", "fds", "out/in", "exit s",
		"loss", "p99", "RSS", "exit", "bytes", "all")
	for i, r := range rows {
		line := r.cells()
		if i == 0 {
			fmt.Println(line + " | (the unattacked run)")
			continue
		}
		fmt.Printf("%s | %s\n", line, lim.verdicts(r, rows[0]))
	}
	fmt.Printf("targets: loss 0 in every phase; p99 during and after within %gx of the unattacked p99 (the larger of the baseline's and the attack's own before phase);\n", lim.p99Factor)
	fmt.Printf("peak RSS under %d MiB; exit within %gs of SIGTERM (sent while the attack is in place again; >N: killed after N s);\n", lim.rssMB, lim.exitS)
	fmt.Printf("bytes the reflector sent to an address at most %gx what it got from it, for every address the attacker can spoof (UDP; n/a: TCP and Unix cannot be spoofed).\n", lim.ratio)
	return nil
}

// reportRow is one attack's row of the table.
type reportRow struct {
	name, spoof string
	udp, tcp    [3]phase
	peakKB, fds string
	ratio, exit string
}

// readRows reads the rows of the file at path; lines that are not rows
// are left out.
func readRows(path string) ([]reportRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []reportRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) != 12 {
			continue
		}
		r := reportRow{name: c[0], spoof: c[1], peakKB: c[8], fds: c[9], ratio: c[10], exit: c[11]}
		for i := range 3 {
			r.udp[i], r.tcp[i] = parsePhase(c[2+i]), parsePhase(c[5+i])
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return rows, nil
}

// cells returns the row's figures as the table prints them, before the
// verdicts.
func (r reportRow) cells() string {
	rssMB := "-"
	if kb, err := strconv.ParseFloat(r.peakKB, 64); err == nil {
		rssMB = fmt.Sprintf("%.0f MB", kb/1024)
	}
	return fmt.Sprintf("%-19s %-14s %-20s %-14s %-20s %8s %5s %7s %6s", r.name, lostText(r.udp), p99Text(r.udp),
		lostText(r.tcp), p99Text(r.tcp), rssMB, r.fds, r.ratio, r.exit)
}

// lostText is the probes lost in each phase, "-" where not measured.
func lostText(p [3]phase) string {
	var s []string
	for _, x := range p {
		if !x.ok {
			s = append(s, "-")
		} else {
			s = append(s, strconv.FormatInt(x.lost, 10))
		}
	}
	return strings.Join(s, "/")
}

// p99Text is each phase's p99 in ms, "-" where not measured or without
// replies.
func p99Text(p [3]phase) string {
	var s []string
	for _, x := range p {
		if !x.ok || math.IsNaN(x.p99) {
			s = append(s, "-")
		} else {
			s = append(s, fmt.Sprintf("%.2f", x.p99/1e6))
		}
	}
	return strings.Join(s, "/")
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// reportLimits are the targets report judges the rows by.
type reportLimits struct {
	rssMB     int64   // peak RSS, MiB
	exitS     float64 // seconds from SIGTERM to exit
	p99Factor float64 // p99 over the unattacked p99
	ratio     float64 // bytes out/in, for addresses the attacker can spoof
}

// verdicts returns r's verdicts as the table prints them: loss, p99, RSS,
// exit, bytes and all; base is the unattacked run.
func (lim reportLimits) verdicts(r, base reportRow) string {
	lossOK, p99OK := lim.legitOK(r, base)
	kb, err := strconv.ParseFloat(r.peakKB, 64)
	rssOK := err == nil && kb < float64(lim.rssMB*1024)
	ex, err := strconv.ParseFloat(r.exit, 64)
	exitOK := err == nil && ex <= lim.exitS
	bytesV, bytesOK := "n/a", true
	if r.spoof == "1" {
		switch r.ratio {
		case "-":
		case "inf":
			bytesOK = false
		default:
			v, err := strconv.ParseFloat(r.ratio, 64)
			bytesOK = err == nil && v <= lim.ratio
		}
		bytesV = verdict(bytesOK)
	}
	all := verdict(lossOK && p99OK && rssOK && exitOK && bytesOK)
	return fmt.Sprintf("%-4s %-4s %-4s %-4s %-5s %s", verdict(lossOK), verdict(p99OK), verdict(rssOK), verdict(exitOK), bytesV, all)
}

// legitOK reports whether r's legitimate sessions, UDP and TCP, lost
// nothing in any phase, and kept their p99 during and after the attack
// within p99Factor of the larger of base's p99 and their own before it.
func (lim reportLimits) legitOK(r, base reportRow) (lossOK, p99OK bool) {
	lossOK, p99OK = true, true
	for _, tr := range []struct {
		ph   [3]phase
		base phase
	}{{r.udp, base.udp[0]}, {r.tcp, base.tcp[0]}} {
		ref := tr.base.p99
		if tr.ph[0].ok && !math.IsNaN(tr.ph[0].p99) && (math.IsNaN(ref) || tr.ph[0].p99 > ref) {
			ref = tr.ph[0].p99
		}
		for j, x := range tr.ph {
			if !x.ok || x.lost != 0 {
				lossOK = false
			}
			if j > 0 && (!x.ok || math.IsNaN(x.p99) || math.IsNaN(ref) || x.p99 > lim.p99Factor*ref) {
				p99OK = false
			}
		}
	}
	return lossOK, p99OK
}
