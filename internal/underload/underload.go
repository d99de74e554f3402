// Package underload runs a latency-under-load measurement (volley client
// --load): one client.Run of open-loop probes through three phases (idle,
// loaded, idle again), the bulk streams of package load started and
// stopped on the phases' schedule, and each phase's figures, the delay the
// load added and the responsiveness score put into result.Load.
package underload
