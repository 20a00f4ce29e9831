package pending

import (
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/bobnet/bobnet/bot"
)

// encodeRecord writes a request record byte for byte as encoding/json
// would, without reflection.
//
// Every request taken in encodes its record on the ack path. Alone, the
// reflective go-json took about 1 µs and three allocations where this
// takes about half that and one. Its larger cost was under load: its
// deep, large frames grew each connection's goroutine stack on every
// request, after the garbage collector had shrunk it again, and stack
// copying was about 4% of the webhook ingest profile. No library writes these types without reflection or code
// generation, so it is written here; TestEncodeRecordMatchesEncodingJSON
// fills every field of every type involved and requires encoding/json's
// bytes, so a field added to one of them and not here fails it, and
// FuzzAppendJSONString holds the string escaping to encoding/json's.
func encodeRecord(r bot.RequestRecord) ([]byte, error) {
	return appendRecord(nil, &r)
}

// appendRecord is encodeRecord writing after b, which it grows once to
// fit r's record in the usual case.
func appendRecord(b []byte, r *bot.RequestRecord) ([]byte, error) {
	b = slices.Grow(b, recordSize(r))
	b = append(b, `{"request":`...)
	b, err := appendRequest(b, &r.Request)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"status":`...)
	b = appendStatus(b, &r.Status)
	if r.Taken {
		b = append(b, `,"taken":true`...)
	}
	if a := r.Answer; a != nil {
		b = append(b, `,"answer":{`...)
		sep := byte(0)
		if a.Reply != nil {
			b = append(b, `"reply":`...)
			b = appendReply(b, a.Reply)
			sep = ','
		}
		b = appendOptField(b, &sep, "proposal_id", string(a.ProposalID))
		b = appendOptField(b, &sep, "failure", a.Failure)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// recordSize is room for r's record in the usual case: its field names,
// its strings and a sixteenth more for escapes. The buffer is then made
// once, where growing it by doubling from a smaller guess cost copies and
// about twice the record's size in garbage per request.
func recordSize(r *bot.RequestRecord) int {
	q := &r.Request
	n := 2*len(q.ID) + len(q.Thread.Channel.Source) + len(q.Thread.Channel.ID) + len(q.Thread.ID) + len(q.User) + len(q.UserName) +
		len(q.Text) + len(q.DedupeKey) + len(q.Revises) + len(q.Feedback) + len(q.Again) + len(q.Via) +
		quotedSize(q.Quoted)
	if q.Webhook != nil {
		n += len(q.Webhook.Hook) + len(q.Webhook.ID)
	}
	return 320 + n + n/16
}

func appendRequest(b []byte, q *bot.Request) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, string(q.ID))
	b = append(b, `,"thread":{"channel":{"source":`...)
	b = appendJSONString(b, string(q.Thread.Channel.Source))
	b = append(b, `,"id":`...)
	b = appendJSONString(b, q.Thread.Channel.ID)
	b = append(b, `},"id":`...)
	b = appendJSONString(b, q.Thread.ID)
	b = append(b, `},"user":`...)
	b = appendJSONString(b, q.User)
	sep := byte(',')
	b = appendOptField(b, &sep, "user_name", q.UserName)
	b = append(b, `,"text":`...)
	b = appendJSONString(b, q.Text)
	b = appendOptField(b, &sep, "dedupe_key", q.DedupeKey)
	b = appendOptField(b, &sep, "revises", string(q.Revises))
	b = appendOptField(b, &sep, "feedback", q.Feedback)
	b = appendOptField(b, &sep, "again", string(q.Again))
	b = appendQuoted(b, &sep, q.Quoted)
	b = appendOptField(b, &sep, "via", q.Via)
	if w := q.Webhook; w != nil {
		b = append(b, `,"webhook":{"hook":`...)
		b = appendJSONString(b, w.Hook)
		b = append(b, `,"id":`...)
		b = appendJSONString(b, w.ID)
		b = append(b, '}')
	}
	b = append(b, `,"received_at":`...)
	// time.Time's MarshalJSON refuses years it cannot write as RFC 3339;
	// so does this.
	if y := q.ReceivedAt.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("encode request %s: received_at year %d is outside [0,9999]", q.ID, y)
	}
	b = append(b, '"')
	b = q.ReceivedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"', '}')
	return b, nil
}

func appendStatus(b []byte, s *bot.RequestStatus) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, string(s.ID))
	b = append(b, `,"state":`...)
	b = appendJSONString(b, string(s.State))
	if s.Reply != nil {
		b = append(b, `,"reply":`...)
		b = appendReply(b, s.Reply)
	}
	sep := byte(',')
	b = appendOptField(b, &sep, "proposal_id", string(s.ProposalID))
	b = appendOptField(b, &sep, "error", s.Error)
	b = appendOptField(b, &sep, "duplicate_of", string(s.DuplicateOf))
	return append(b, '}')
}

func appendReply(b []byte, r *bot.Reply) []byte {
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, string(r.Kind))
	b = append(b, `,"text":`...)
	b = appendJSONString(b, r.Text)
	if len(r.Questions) > 0 {
		b = append(b, `,"questions":[`...)
		for i, q := range r.Questions {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, q)
		}
		b = append(b, ']')
	}
	sep := byte(',')
	b = appendOptField(b, &sep, "board_url", r.BoardURL)
	return append(b, '}')
}

// appendOptField writes an omitempty string field: nothing when v is
// empty, else the separator (none for an object's first field, which sep
// 0 marks; it becomes a comma after) and "name":v.
func appendOptField(b []byte, sep *byte, name, v string) []byte {
	if v == "" {
		return b
	}
	if *sep != 0 {
		b = append(b, *sep)
	}
	*sep = ','
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string exactly as encoding/json
// does with its default HTML escaping: ", \ and the control characters
// escaped (\b \f \n \r \t by their short forms, the rest as \u00XX), <, >
// and & as \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and
// \u2029 (JavaScript line terminators), and each invalid UTF-8 byte as
// \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
