package apitoken

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/bobnet/bobnet/board"
)

// MaxChannelPatterns is how many channel patterns one token may hold.
const MaxChannelPatterns = 100

// maxPattern is the longest pattern: a policy key's length, which is
// longer than any channel key.
const maxPattern = 300

// sources are the channel sources a pattern may start with. Hook
// channels are console channels (console:hook-NAME).
var sources = []board.Source{board.SourceSlack, board.SourceMatrix, board.SourceConsole}

// CheckChannelPattern says what is wrong with one channel pattern, or
// nil: an exact channel key (slack:C0123, slack:T0ONE/C0123,
// matrix:!room:server, console:newsroom) or a prefix of keys ending in *
// (slack:T0ONE/*, console:*), always starting with a known source.
func CheckChannelPattern(p string) error {
	if p == "" {
		return fmt.Errorf("%w: it is empty", ErrBadChannels)
	}
	if len(p) > maxPattern {
		return fmt.Errorf("%w %.40q…: it is longer than %d characters", ErrBadChannels, p, maxPattern)
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("%w %q: it holds a space or control character", ErrBadChannels, p)
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
		return fmt.Errorf("%w %q: * may only end a pattern (a prefix such as slack:T0ONE/*)", ErrBadChannels, p)
	}
	src, id, ok := strings.Cut(p, ":")
	if !ok || !slices.Contains(sources, board.Source(src)) {
		return fmt.Errorf("%w %q: start it with a known source, slack:, matrix: or console: (such as slack:T0ONE/* or console:newsroom)", ErrBadChannels, p)
	}
	if id == "" {
		return fmt.Errorf("%w %q: it names no channel; add the channel after the colon, or end it with * for every %s channel", ErrBadChannels, p, src)
	}
	if board.Source(src) == board.SourceConsole && !strings.HasSuffix(id, "*") && !board.ValidConsoleName(id) {
		return fmt.Errorf("%w %q: console channel names are 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit", ErrBadChannels, p)
	}
	return nil
}

// Every error of CheckChannelPattern, ParseChannels and CheckChannels
// wraps ErrBadChannels.

// ParseChannels reads a comma-separated list of channel patterns, each
// checked with CheckChannelPattern; an empty list (no limit) is nil.
func ParseChannels(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	return CheckChannels(strings.Split(list, ","))
}

// CheckChannels checks channel patterns and returns them trimmed, in
// order, each once; none is nil (no limit).
func CheckChannels(patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if err := CheckChannelPattern(p); err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) > MaxChannelPatterns {
		return nil, fmt.Errorf("%w: a token holds at most %d channel patterns, not %d", ErrBadChannels, MaxChannelPatterns, len(out))
	}
	return out, nil
}

// Limited says whether the token reaches only some channels.
func (t Token) Limited() bool { return len(t.Channels) > 0 }

// Reaches says whether the token may see and change what belongs to
// channel (a key such as slack:T0ONE/C0123). A token without channel
// patterns reaches every channel.
func (t Token) Reaches(channel string) bool {
	if !t.Limited() {
		return true
	}
	for _, p := range t.Channels {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(channel, prefix) {
				return true
			}
		} else if channel == p {
			return true
		}
	}
	return false
}

// ReachesAll says whether every channel whose key starts with prefix is
// one the token reaches: a prefix pattern of the token covers it (the
// token slack:T0ONE/* covers slack:T0ONE/, not slack:). A policy stored
// for slack:T0ONE/* is reached this way.
func (t Token) ReachesAll(prefix string) bool {
	if !t.Limited() {
		return true
	}
	for _, p := range t.Channels {
		if pp, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(prefix, pp) {
			return true
		}
	}
	return false
}
