package plan

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TextError means a text holds a control character that has no place in
// BobNet's text (see CheckText).
type TextError struct {
	Rune rune
}

func (e *TextError) Error() string {
	if e.Rune == 0 {
		return "contains the control character U+0000 (NUL), which cannot be stored"
	}
	return fmt.Sprintf("contains the control character U+%04X", e.Rune)
}

// CheckText is the one check for text that enters BobNet from people or
// models, whichever way it comes: a plan's fields, a card's title, body
// or assignee changed through the API, the board page or a chat command.
// It refuses control characters other than tab, newline and carriage
// return (a NUL cannot even be stored in Postgres) with a *TextError, and
// for a one-line text (line: a title, a board name, an assignee) it drops
// the invisible formatting characters that make text read as something
// else (bidirectional overrides, zero-width characters).
func CheckText(s string, line bool) (string, error) {
	if r, bad := controlChar(s); bad {
		return s, &TextError{Rune: r}
	}
	if line {
		s = neutralize(s)
	}
	return s, nil
}

// controlChar returns the first control character in s that has no place
// in a plan (anything of Unicode's Cc category but tab, newline and
// carriage return), and whether there is one. A NUL cannot even be stored
// in Postgres text; the rest garble terminals and chat clients.
func controlChar(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return r, true
		case r == utf8.RuneError:
			// encoding/json already replaced invalid UTF-8; nothing to add.
		}
	}
	return 0, false
}

// invisible reports characters that change how a one-line title reads
// without being seen: bidirectional overrides, embeddings and isolates,
// which can make "Approve" of one card look like another, and zero-width
// spaces, joiners and byte-order marks.
func invisible(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return true
	}
	return false
}

// neutralize removes invisible formatting characters from a one-line
// display text (a card title, a board name), so what a person approves is
// what they read.
func neutralize(s string) string {
	if strings.IndexFunc(s, invisible) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}
