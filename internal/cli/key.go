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
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, usagef("--key-file: %v", err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(b) == 0 {
			return nil, usagef("--key-file %s is empty", keyFile)
		}
		return b, nil
	}
	return nil, nil
}
