package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/bobnet/bobnet/plan"
)

// MaxRawOutput is the largest model output the parser looks at.
const MaxRawOutput = 256 << 10

// MaxDepth is the deepest nesting of objects and arrays accepted. A plan
// needs about six levels; the cap keeps hostile input from costing more
// than a linear scan.
const MaxDepth = 64

// Parse errors; check with errors.Is.
var (
	ErrTooLarge  = errors.New("model output is larger than 256 KiB")
	ErrNoJSON    = errors.New("no JSON object found in the model output")
	ErrAmbiguous = errors.New("model output holds more than one JSON object; refusing to guess which is the plan")
	ErrTruncated = errors.New("model output ends inside a JSON object (truncated)")
	ErrTooDeep   = errors.New("JSON nesting is deeper than 64 levels")
)

var (
	// thinkBlock matches reasoning blocks some models emit before answering.
	thinkBlock = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*?</(think|thinking|reasoning)>`)
	// unclosedThink matches a reasoning block the model never closed.
	unclosedThink = regexp.MustCompile(`(?is)^\s*<(think|thinking|reasoning)>`)
	// sentinel matches chat-template control tokens (ChatML, Llama 3,
	// Harmony): <|im_start|>, <|eot_id|>, <|channel|>final<|message|>…
	sentinel = regexp.MustCompile(`<\|[A-Za-z0-9_]{1,32}\|>`)
	// harmonyHeader matches the role/channel words a Harmony or ChatML
	// sentinel leaves behind at the start of a line ("assistant", "final").
	harmonyHeader = regexp.MustCompile(`(?m)^\s*(assistant|analysis|commentary|final|json)\s*$`)
)

// Parse extracts the single JSON object a model output holds. It accepts
// pure JSON, JSON in a markdown fence, or one object inside prose; it strips
// a UTF-8 BOM, <think> blocks and chat-template sentinels. It scans
// string-aware, so braces inside strings are data. Two objects, a truncated
// object, a top-level array or no JSON are errors, never guesses.
func Parse(raw []byte) (json.RawMessage, error) {
	if len(raw) > MaxRawOutput {
		return nil, ErrTooLarge
	}
	text := bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	// The regular expressions cost more than the rest of the parse, so they
	// run only when a cheap look says their markers may be there.
	if mayHaveTag(text) {
		text = thinkBlock.ReplaceAll(text, nil)
		if unclosedThink.Match(text) {
			return nil, fmt.Errorf("%w: the reasoning block was never closed", ErrTruncated)
		}
	}
	if bytes.Contains(text, []byte("<|")) {
		text = sentinel.ReplaceAll(text, []byte("\n"))
		text = harmonyHeader.ReplaceAll(text, nil)
	}

	spans, arrays, err := scan(text)
	if err != nil {
		return nil, err
	}
	// Brace spans that are not JSON ("use {name} here") are prose, not
	// candidates; but when nothing else is found, the broken one is what
	// the model meant and its syntax error is the useful message.
	var objects [][]byte
	var firstErr error
	for _, span := range spans {
		if !json.Valid(span) {
			if firstErr == nil {
				var v any
				firstErr = json.Unmarshal(span, &v)
			}
			continue
		}
		objects = append(objects, span)
	}
	switch {
	case len(objects) == 1:
		return json.RawMessage(objects[0]), nil
	case len(objects) > 1:
		return nil, ErrAmbiguous
	case firstErr != nil:
		return nil, fmt.Errorf("%w: %w", plan.ErrBadJSON, firstErr)
	case arrays > 0:
		return nil, plan.ErrNotObject
	default:
		return nil, ErrNoJSON
	}
}

// mayHaveTag reports whether text may hold a <think>, <thinking> or
// <reasoning> tag, in any case.
func mayHaveTag(text []byte) bool {
	for i := bytes.IndexByte(text, '<'); i >= 0 && i+1 < len(text); {
		switch text[i+1] | 0x20 {
		case 't', 'r':
			return true
		}
		j := bytes.IndexByte(text[i+1:], '<')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// scan walks text once and returns every top-level {...} span and the
// number of top-level [...] spans. Outside JSON, quotes in prose ("it's")
// are not strings, so string tracking starts only inside a span.
func scan(text []byte) (objects [][]byte, arrays int, err error) {
	depth := 0
	start := -1
	inString, escaped := false, false
	var open byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		if depth == 0 {
			if c == '{' || c == '[' {
				// A '[' in prose ("[1]", "[link]") is only an array when it
				// parses as one; objects are what we look for.
				open, start, depth = c, i, 1
				inString, escaped = false, false
			}
			continue
		}
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return nil, 0, ErrTooDeep
			}
		case '}', ']':
			depth--
			if depth == 0 {
				span := text[start : i+1]
				if open == '{' {
					objects = append(objects, span)
				} else if json.Valid(span) {
					arrays++
				}
				start = -1
			}
		}
	}
	if depth > 0 && open == '{' {
		return nil, 0, ErrTruncated
	}
	if depth > 0 && open == '[' && len(objects) == 0 {
		// An unclosed '[' in prose with no object anywhere: say truncated
		// only if it looked like JSON.
		if bytes.Contains(text[start:], []byte("{")) {
			return nil, 0, ErrTruncated
		}
	}
	return objects, arrays, nil
}
