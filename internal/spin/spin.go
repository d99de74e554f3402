package spin

import "errors"

// ErrQuiet: ReadFor spun its quiet spell with nothing to read.
var ErrQuiet = errors.New("spin: nothing to read in a quiet spell")
