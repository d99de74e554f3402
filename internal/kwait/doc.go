// Package kwait lets a reader that has a thread to itself wait for its
// socket inside the kernel, in one blocking system call, as a C tool's
// blocking recv does, instead of in the runtime's poller (a failed
// non-blocking read, a park, the poller's wake-up, and the read again:
// 3-5 µs of every loopback round trip at each end).
//
// A Socket leaves the runtime's epoll set for as long: while it is in it,
// everything that arrives on it (and every transmit stamp queued on it)
// also wakes whichever thread waits in epoll for the runtime's timers, two
// context switches more per round trip (measured: 3 per round trip instead
// of 1, p50 22.6 µs instead of 20.1 in a bare Go ping-pong with one timer
// pending). The runtime says nothing of its epoll instance, so the
// socket's entry is found in /proc/self/fdinfo and put back as it was
// (Rejoin); where that fails, Leave fails and the poller stays. A
// busy-polling UDP socket leaves the same way, for the same wake-ups,
// and spins on receives that do not wait (MSG_DONTWAIT).
//
// Out of the poller, nothing on the socket may wait in it: a blocking
// socket's sends wait in the kernel too (SO_SNDTIMEO, Cap at a time,
// up to their deadline; the runtime's deadline timers still end a write
// that waits in the poller), and both timeouts are counted in the
// kernel's ticks (jiffies), so deadlines are kept by waking early: a read
// waits at most half of what is left before its deadline less two ticks,
// and at most Cap, so that a deadline moved earlier by another goroutine
// (an interrupt) is seen within Cap (Close wakes it at once, Shutdown);
// within three ticks of the deadline it waits one tick at a time, which
// the kernel's timer wheel ends one to two ticks later: a read can return
// up to two ticks (8 ms at HZ=250) after its deadline. Callers that need
// finer wake-ups (short timeouts, bursts with a period, gaps) keep the
// poller.
//
// A Unix stream socket's read waits in ppoll(2) for POLLIN and then reads
// without waiting, two calls where one would do: its blocking read is
// also woken whenever the peer reads what this end sent (the kernel's
// write-space wake-up reaches every sleeper on the socket), a second sleep
// and wake-up per round trip (see Socket.pollFirst). That wait keeps its
// deadline to the timer's precision. Conn.ReadRest, for the rest of a
// message begun, waits in read(2), to the tick's.
//
// Deadlines are clock.Deadline's: ns on the monotonic clock, so that a
// wall clock that steps or drifts does not move them.
package kwait
