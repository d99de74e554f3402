package stream

const busySupported = true
