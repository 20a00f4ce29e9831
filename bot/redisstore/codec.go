package redisstore

import (
	"fmt"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/bobnet/bobnet/board"
)

// decodeProposal reads a proposal this store wrote with encoding/json.
//
// It decodes with goccy/go-json rather than encoding/json because an
// approval decodes the whole proposal between the click and the answer,
// and every one of many concurrent clicks on a proposal decodes it again;
// the commit that kept it has the Approve64 and ConcurrentApproves100
// figures. Only decoding changes, and only for data the store encoded
// itself; TestDecodeProposalMatchesEncodingJSON holds the two decoders to
// the same result.
func decodeProposal(id board.ProposalID, raw string) (board.Proposal, error) {
	var p board.Proposal
	if err := gojson.Unmarshal([]byte(raw), &p); err != nil {
		return board.Proposal{}, fmt.Errorf("proposal %s: %w", id, err)
	}
	return p, nil
}

// encodeRecord writes a request record as encoding/json does (the same
// JSON, though an escape may be spelled apart). Taking a request in
// encodes its record on the acknowledgement's path: a record as it is
// taken in (appendIntakeRecord's) is written field by field, any other
// with goccy/go-json (half encoding/json's time: 1.8 → 0.9 µs for a
// Slack mention's record). go-json's encoder runs in one function with a
// frame so large that an HTTP handler's goroutine grows its stack for it,
// again after every collection shrinks it: in the ingest workload that
// and time.Time's MarshalJSON were two thirds of the record's cost.
// TestEncodeRecordMatchesEncodingJSON and FuzzEncodeRecord hold the
// encoders to records that read back alike.
func encodeRecord(r board.RequestRecord) ([]byte, error) {
	if b, ok := appendIntakeRecord(make([]byte, 0, 512), &r); ok {
		return b, nil
	}
	return gojson.Marshal(r)
}

// appendIntakeRecord appends r as JSON when it is a record as taken in
// (no quoted turns, webhook, reply or answer, and a time JSON can
// spell); ok is false for any other, and b is then not to be used.
func appendIntakeRecord(b []byte, r *board.RequestRecord) (_ []byte, ok bool) {
	q, st := &r.Request, &r.Status
	if q.Quoted != nil || q.Webhook != nil || st.Reply != nil || r.Answer != nil {
		return b, false
	}
	// time.Time's MarshalJSON refuses years past 9999 and before 0, and
	// zone offsets of a day or more.
	if y := q.ReceivedAt.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := q.ReceivedAt.Zone(); off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = append(b, `{"request":{"id":`...)
	b = appendJSONString(b, string(q.ID))
	b = append(b, `,"thread":{"channel":{"source":`...)
	b = appendJSONString(b, string(q.Thread.Channel.Source))
	b = append(b, `,"id":`...)
	b = appendJSONString(b, q.Thread.Channel.ID)
	b = append(b, `},"id":`...)
	b = appendJSONString(b, q.Thread.ID)
	b = append(b, `},"user":`...)
	b = appendJSONString(b, q.User)
	b = appendOmitEmpty(b, `,"user_name":`, q.UserName)
	b = append(b, `,"text":`...)
	b = appendJSONString(b, q.Text)
	b = appendOmitEmpty(b, `,"dedupe_key":`, q.DedupeKey)
	b = appendOmitEmpty(b, `,"revises":`, string(q.Revises))
	b = appendOmitEmpty(b, `,"feedback":`, q.Feedback)
	b = appendOmitEmpty(b, `,"again":`, string(q.Again))
	b = appendOmitEmpty(b, `,"via":`, q.Via)
	b = append(b, `,"received_at":"`...)
	b = q.ReceivedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"},"status":{"id":`...)
	b = appendJSONString(b, string(st.ID))
	b = append(b, `,"state":`...)
	b = appendJSONString(b, string(st.State))
	b = appendOmitEmpty(b, `,"proposal_id":`, string(st.ProposalID))
	b = appendOmitEmpty(b, `,"error":`, st.Error)
	b = appendOmitEmpty(b, `,"duplicate_of":`, string(st.DuplicateOf))
	b = append(b, '}')
	if r.Taken {
		b = append(b, `,"taken":true`...)
	}
	return append(b, '}'), true
}

// appendOmitEmpty appends key and s as a JSON string, unless s is empty.
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONString appends s as a JSON string that reads back as
// encoding/json's spelling of it does: a byte that is not UTF-8 as
// U+FFFD, control characters, quotes and backslashes escaped, and (as
// encoding/json does) <, >, &, U+2028 and U+2029.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
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
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
