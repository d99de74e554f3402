//go:build !linux

package ifstats

import (
	"errors"
	"fmt"
)

func read(name string) (Counters, error) {
	return Counters{}, fmt.Errorf("interface %s counters: %w", name, errors.ErrUnsupported)
}
