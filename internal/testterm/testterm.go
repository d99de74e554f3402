// Package testterm replays what a program wrote to a terminal as the rows
// a screen would show, for tests of output that redraws a line in place.
// Only tests import it.
package testterm

import (
	"strings"
	"unicode/utf8"
)

// Screen replays s: '\r' returns to the row's start, "\x1b[K" erases from
// the cursor to the row's end, '\n' ends the row, anything else is written
// over the row at the cursor. It returns the ended rows and the row the
// cursor is on.
func Screen(s string) (rows []string, last string) {
	var row []rune
	col := 0
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "\x1b[K"):
			row = row[:col]
			i += 3
		case s[i] == '\r':
			col = 0
			i++
		case s[i] == '\n':
			rows = append(rows, string(row))
			row, col = row[:0], 0
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if col < len(row) {
				row[col] = r
			} else {
				row = append(row, r)
			}
			col++
			i += n
		}
	}
	return rows, string(row)
}
