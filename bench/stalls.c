// stalls: the machine's own floor for anything that waits by spinning.
// Spins reading CLOCK_MONOTONIC for SECONDS (default 3) and counts the
// gaps between consecutive readings longer than 10 µs: time the thread
// did not run (the hypervisor, interrupts, other threads). Prints stalls
// per second, the share of time spent in them, the share of time at which
// a deadline would be met more than 10 µs late by a thread spinning for
// it, and the p99 of that lateness for a deadline at a random time: how
// much a thread that spins all the time loses to the machine. (A sender
// that sleeps most of each gap is preempted less: it is a gauge of the
// machine's state, not a bound on a send error.) Gaps are counted by
// whole µs, so the p99 is at most 1 µs high, and gaps over 100 ms count
// as 100 ms. Built and run by bench/compare.sh (cc bench/stalls.c -O2 -o
// stalls; ./stalls 3).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// Gaps by whole µs, up to MAXUS (longer ones count there).
#define MAXUS 100000
static long long gaps[MAXUS + 1];

// lateP99 is the lateness x (µs) that a deadline at a random time of a
// span of span ns exceeds 1% of the time: a deadline in a gap of g µs is
// met late by what is left of the gap, so P(late > x) is the sum of
// (g - x) over the gaps longer than x, over the span.
static double lateP99(double span) {
	double tail = 0; // sum over gaps > x of (g - x), in µs, as x falls
	long long longer = 0; // gaps longer than x
	for (int x = MAXUS; x > 0; x--) {
		longer += gaps[x];
		tail += longer; // x-1 is one µs further from each of them
		if (tail * 1e3 / span >= 0.01)
			return x;
	}
	return 0;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3;
	long long start = now(), end = start + (long long)(secs * 1e9), last = start;
	long long n = 0, in = 0, late = 0, longest = 0;
	for (;;) {
		long long t = now(), g = t - last;
		long long us = g / 1000;
		gaps[us > MAXUS ? MAXUS : us]++;
		if (g > 10000) {
			n++;
			in += g;
			late += g - 10000; // a deadline in the first g-10µs of the gap is met >10µs late
			if (g > longest)
				longest = g;
		}
		last = t;
		if (t > end)
			break;
	}
	double span = (double)(last - start);
	printf("stalls over 10us: %.0f/s, %.2f%% of the time; a spinning wait is >10us late %.2f%% of the time, p99 %.0fus late; longest %.0fus\n",
	       n / (span / 1e9), 100 * in / span, 100 * late / span, lateP99(span), longest / 1e3);
	return 0;
}
