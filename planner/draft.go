package planner

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bobnet/bobnet/plan"
)

// Draft is a plan as read so far out of a streamed answer: the board's
// title once written and every card whose object is complete. Its cards
// are drafts: the final validation may still refuse them, so whoever shows
// them shows them as such. Its cards are shared with the reader that made
// it and read only: nobody changes a card handed out.
type Draft struct {
	Title string
	Cards []plan.CardDraft
}

// DraftReader reads the board's title and the cards of a plan out of a
// model's answer as it streams in, each as soon as its JSON object is
// complete. It is tolerant: prose, fences and <think> blocks around the
// object, broken JSON and an answer that is not a plan at all only mean
// fewer cards. It never fails, never panics, and does work linear in what
// it is given (a card's object is decoded once); past MaxRawOutput or
// MaxDepth it stops reading. It is not safe for concurrent use.
type DraftReader struct {
	buf   []byte
	pos   int // next byte of buf to scan
	stack []frame
	// at depth 0 (outside any object), whether a reasoning block is open
	// and the tag that closes it.
	skipUntil string
	// in a string, and after a backslash in it; keyStart is where a key
	// being read starts (-1: the string is not a key).
	inString, escaped bool
	keyStart          int
	stopped           bool

	draft Draft
}

// frame is one open object or array.
type frame struct {
	open      byte // '{' or '['
	role      role
	start     int    // offset of the opening byte
	key       string // an object's key whose value comes next
	expectKey bool   // an object's next string is a key
}

// role is what an open object or array is in a plan's envelope.
type role uint8

const (
	roleOther    role = iota
	roleEnvelope      // the top-level object
	roleActions       // its "actions" array
	roleAction        // one action
	roleCards         // an action's "cards" array
	roleCard          // one card
	roleBoard         // an action's "board" object
)

// maxDraftTitle caps a draft card's title and the board's, as shown.
const maxDraftTitle = 200

// Write feeds the next piece of the answer and reports whether the draft
// changed (a title or a card was completed).
func (r *DraftReader) Write(piece string) (changed bool) {
	if r.stopped {
		return false
	}
	if len(r.buf)+len(piece) > MaxRawOutput {
		r.stopped = true
		return false
	}
	r.buf = append(r.buf, piece...)
	before, cards := r.draft.Title, len(r.draft.Cards)
	r.scan()
	return r.draft.Title != before || len(r.draft.Cards) != cards
}

// Reset forgets everything read, for an answer that starts over.
func (r *DraftReader) Reset() { *r = DraftReader{} }

// Draft returns the draft so far. Its card list does not change with
// later writes: the reader only appends cards, never changes one, and
// the list is capped at its length, so an append by either side copies.
// (A copy each time was a fifth of what a 64-card plan's streaming
// allocated.)
func (r *DraftReader) Draft() Draft {
	n := len(r.draft.Cards)
	return Draft{Title: r.draft.Title, Cards: r.draft.Cards[:n:n]}
}

// draftSink reads a streamed answer into drafts for on.
type draftSink struct {
	r  DraftReader
	on func(Draft)
}

// draftSinkFor is the sink that tells on the drafts of a streamed
// answer; nil for none.
func draftSinkFor(on func(Draft)) textSink {
	if on == nil {
		return nil
	}
	return &draftSink{on: on}
}

func (s *draftSink) start() { s.r.Reset() }

func (s *draftSink) text(piece string) {
	if s.r.Write(piece) {
		s.on(s.r.Draft())
	}
}

// reasoningTags are the blocks some models think aloud in before the
// answer; a '{' in them is not the plan's.
var reasoningTags = []string{"think", "thinking", "reasoning"}

func (r *DraftReader) scan() {
	for r.pos < len(r.buf) && !r.stopped {
		i, c := r.pos, r.buf[r.pos]
		if len(r.stack) == 0 {
			if !r.scanOutside(i, c) {
				return // a tag not yet complete: wait for more
			}
			continue
		}
		r.pos++
		top := &r.stack[len(r.stack)-1]
		if r.inString {
			switch {
			case r.escaped:
				r.escaped = false
			case c == '\\':
				r.escaped = true
			case c == '"':
				r.inString = false
				if r.keyStart >= 0 {
					top.key, r.keyStart = objectKey(r.buf[r.keyStart:i+1]), -1
				}
			}
			continue
		}
		switch c {
		case '"':
			r.inString, r.keyStart = true, -1
			if top.open == '{' && top.expectKey {
				r.keyStart, top.expectKey = i, false
			}
		case ',':
			if top.open == '{' {
				top.expectKey, top.key = true, ""
			}
		case '{', '[':
			if len(r.stack) >= MaxDepth {
				r.stopped = true
				return
			}
			r.stack = append(r.stack, frame{open: c, role: childRole(*top, c), start: i, expectKey: c == '{'})
		case '}', ']':
			done := r.stack[len(r.stack)-1]
			r.stack = r.stack[:len(r.stack)-1]
			if c == '}' && done.open == '{' {
				r.closed(done, r.buf[done.start:i+1])
			}
		}
	}
}

// objectKey is the text of a key's JSON string quoted, "" when it is not
// one. A key without escapes is its bytes, read without encoding/json,
// which made a quarter of the allocations of a 64-card plan's stream
// (BenchmarkDraftReader64Cards); the keys that matter
// (childRole) are plain ASCII, so one with a byte that is not UTF-8 (which
// encoding/json would read as U+FFFD) matches none of them either way.
func objectKey(quoted []byte) string {
	if raw := quoted[1 : len(quoted)-1]; bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return ""
	}
	return k
}

// scanOutside reads one byte at depth 0, where only an object's opening
// and reasoning blocks matter; false when a tag needs more bytes to tell.
func (r *DraftReader) scanOutside(i int, c byte) bool {
	if r.skipUntil != "" {
		j := indexFold(r.buf[i:], r.skipUntil)
		if j < 0 {
			// Keep the last bytes, which may start the closing tag.
			r.pos = max(i, len(r.buf)-len(r.skipUntil)+1)
			return false
		}
		r.pos, r.skipUntil = i+j+len(r.skipUntil), ""
		return true
	}
	switch c {
	case '{':
		r.pos++
		r.stack = append(r.stack, frame{open: '{', role: roleEnvelope, start: i, expectKey: true})
		r.inString, r.escaped = false, false
		return true
	case '<':
		rest := r.buf[i:]
		for _, tag := range reasoningTags {
			open := "<" + tag + ">"
			n := min(len(rest), len(open))
			if !hasPrefixFold(rest[:n], open[:n]) {
				continue
			}
			if n < len(open) {
				return false
			}
			r.pos, r.skipUntil = i+len(open), "</"+tag+">"
			return true
		}
	}
	r.pos++
	return true
}

// childRole is the role of an object or array opened (with open) inside
// parent, at parent's current key.
func childRole(parent frame, open byte) role {
	switch {
	case parent.role == roleEnvelope && parent.key == "actions" && open == '[':
		return roleActions
	case parent.role == roleActions && open == '{':
		return roleAction
	case parent.role == roleAction && parent.key == "cards" && open == '[':
		return roleCards
	case parent.role == roleAction && parent.key == "board" && open == '{':
		return roleBoard
	case parent.role == roleCards && open == '{':
		return roleCard
	}
	return roleOther
}

// closed takes in a completed object: a card or the board.
func (r *DraftReader) closed(f frame, span []byte) {
	switch f.role {
	case roleCard:
		if c, ok := draftCard(span); ok {
			r.draft.Cards = append(r.draft.Cards, c)
		}
	case roleBoard:
		var b struct {
			Name any `json:"name"`
		}
		if json.Unmarshal(span, &b) == nil && r.draft.Title == "" {
			r.draft.Title = plan.Cut(oneLine(text(b.Name)), maxDraftTitle, "…")
		}
	}
}

// draftCard reads a card's object as leniently as is safe: fields of the
// wrong type are left empty; a card without a title is not shown.
func draftCard(span []byte) (plan.CardDraft, bool) {
	var m map[string]any
	if json.Unmarshal(span, &m) != nil {
		return plan.CardDraft{}, false
	}
	c := plan.CardDraft{
		TempID:             strings.TrimSpace(text(m["temp_id"])),
		Title:              plan.Cut(oneLine(text(m["title"])), maxDraftTitle, "…"),
		Body:               strings.TrimSpace(text(m["body"])),
		Assignee:           strings.TrimSpace(text(m["assignee"])),
		Status:             strings.TrimSpace(text(m["status"])),
		WorkspaceMode:      strings.TrimSpace(text(m["workspace_mode"])),
		AcceptanceCriteria: texts(m["acceptance_criteria"]),
		SuggestedSkills:    texts(m["suggested_skills"]),
		Notes:              strings.TrimSpace(text(m["notes"])),
		DependsOn:          texts(m["depends_on"]),
	}
	return c, c.Title != ""
}

func text(v any) string {
	s, _ := v.(string)
	return s
}

func texts(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, x := range list {
		if s := strings.TrimSpace(text(x)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// oneLine is s on one line, its runs of white space one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// hasPrefixFold reports whether b starts with the ASCII prefix, in any
// case.
func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		if lower(b[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// indexFold is where the lower-case ASCII sub first is in b, in any case;
// -1 if nowhere.
func indexFold(b []byte, sub string) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if lower(b[i]) == sub[0] && hasPrefixFold(b[i:], sub) {
			return i
		}
	}
	return -1
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
