// stalls: the machine's own floor for anything that waits by spinning.
// Spins reading CLOCK_MONOTONIC for SECONDS (default 3) and counts the
// gaps between consecutive readings longer than 10 µs: time the thread
// did not run (the hypervisor, interrupts, other threads). Prints stalls
// per second, the share of time spent in them, and the share of time at
// which a deadline would be met more than 10 µs late by a thread spinning
// for it: when that share is above 1%, no program can keep a send-time
// error p99 under 10 µs on this machine. Built and run by bench/compare.sh
// (cc bench/stalls.c -O2 -o stalls; ./stalls 3).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3;
	long long start = now(), end = start + (long long)(secs * 1e9), last = start;
	long long n = 0, in = 0, late = 0, longest = 0;
	for (;;) {
		long long t = now(), g = t - last;
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
	printf("stalls over 10us: %.0f/s, %.2f%% of the time; a spinning wait is >10us late %.2f%% of the time; longest %.0fus\n",
	       n / (span / 1e9), 100 * in / span, 100 * late / span, longest / 1e3);
	return 0;
}
