package cli

import (
	"bytes"
	"os"
)

// loadKey returns the shared key from --key or --key-file (nil for none).
// A key file's trailing newline is not part of the key.
func loadKey(key, keyFile string) ([]byte, error) {
	switch {
	case key != "" && keyFile != "":
		return nil, usagef("--key and --key-file both given: want one of them")
	case key != "":
		return []byte(key), nil
	case keyFile != "":
		return readKeyFile("--key-file", keyFile)
	}
	return nil, nil
}

// readKeyFile reads the key in the file at path, given by flag; its
// trailing newline is not part of the key.
func readKeyFile(flag, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, usagef("%s %s is empty", flag, path)
	}
	return b, nil
}
