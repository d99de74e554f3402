//go:build !linux

package stream

const busySupported = false
