package slack

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"
)

// eventEnvelope is the Events API's outer object.
type eventEnvelope struct {
	Type           string          `json:"type"`
	Challenge      string          `json:"challenge"`
	TeamID         string          `json:"team_id"`
	EnterpriseID   string          `json:"enterprise_id"`
	Authorizations []authorization `json:"authorizations"`
	EventID        string          `json:"event_id"`
	// EventTime is when the event happened, in Unix seconds; Slack
	// keeps it when it delivers the event again.
	EventTime int64      `json:"event_time"`
	Event     innerEvent `json:"event"`
	// installation is the workspace the event was scoped to
	// (multi-workspace mode).
	installation string
}

type innerEvent struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	User     string `json:"user"`
	BotID    string `json:"bot_id"`
	Text     string `json:"text"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts"`
	Channel  string `json:"channel"`
	// Tokens are what a tokens_revoked event revokes.
	Tokens struct {
		Bot []string `json:"bot"`
	} `json:"tokens"`
	Tab string `json:"tab"` // app_home_opened
}

// decodeEnvelope reads an Events API body into env, with a parser of
// parsers, as json.Unmarshal would: a field of another type is an error,
// null leaves a field as it is, unknown fields are skipped, keys match
// without regard to case (FuzzEnvelopeMatchesEncodingJSON holds the two
// together). Every event Slack sends is read on the acknowledgement's
// path, where encoding/json's reflection cost about 3x what fastjson's
// validation, parse and the field walk below cost. A body fastjson would
// read otherwise (invalid UTF-8, which encoding/json turns into U+FFFD;
// a surrogate escape, which the two decode differently when it is not
// one of a pair; a control character, which fastjson's validator lets
// through in a string when an escape follows it) goes to encoding/json.
func decodeEnvelope(parsers *fastjson.ParserPool, body []byte, env *eventEnvelope) error {
	if !utf8.Valid(body) || surrogateEscape(body) || hasControl(body) {
		return json.Unmarshal(body, env)
	}
	// fastjson's parser accepts some numbers JSON does not (NaN, 1.2.3);
	// its validator does not.
	if err := fastjson.ValidateBytes(body); err != nil {
		return err
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return err
	}
	ar := &strArena{b: make([]byte, 0, len(body))}
	return fields(v, envelopeFields, func(name string, v *fastjson.Value) error {
		switch name {
		case "type":
			return ar.str(v, &env.Type)
		case "challenge":
			return ar.str(v, &env.Challenge)
		case "team_id":
			return ar.str(v, &env.TeamID)
		case "enterprise_id":
			return ar.str(v, &env.EnterpriseID)
		case "event_id":
			return ar.str(v, &env.EventID)
		case "event_time":
			return integer(v, &env.EventTime)
		case "authorizations":
			return authorizations(ar, v, &env.Authorizations)
		case "event":
			return inner(ar, v, &env.Event)
		}
		return nil
	})
}

var (
	envelopeFields      = []string{"type", "challenge", "team_id", "enterprise_id", "event_id", "event_time", "authorizations", "event"}
	innerFields         = []string{"type", "subtype", "user", "bot_id", "text", "ts", "thread_ts", "channel", "tokens", "tab"}
	authorizationFields = []string{"team_id", "enterprise_id", "is_enterprise_install"}
)

func inner(ar *strArena, v *fastjson.Value, ev *innerEvent) error {
	return fields(v, innerFields, func(name string, v *fastjson.Value) error {
		switch name {
		case "type":
			return ar.str(v, &ev.Type)
		case "subtype":
			return ar.str(v, &ev.Subtype)
		case "user":
			return ar.str(v, &ev.User)
		case "bot_id":
			return ar.str(v, &ev.BotID)
		case "text":
			return ar.str(v, &ev.Text)
		case "ts":
			return ar.str(v, &ev.TS)
		case "thread_ts":
			return ar.str(v, &ev.ThreadTS)
		case "channel":
			return ar.str(v, &ev.Channel)
		case "tab":
			return ar.str(v, &ev.Tab)
		case "tokens":
			return fields(v, []string{"bot"}, func(_ string, v *fastjson.Value) error {
				return ar.strs(v, &ev.Tokens.Bot)
			})
		}
		return nil
	})
}

func authorizations(ar *strArena, v *fastjson.Value, as *[]authorization) error {
	if v.Type() == fastjson.TypeNull {
		*as = nil
		return nil
	}
	items, err := v.Array()
	if err != nil {
		return err
	}
	out := make([]authorization, len(items))
	for i, item := range items {
		a := &out[i]
		err := fields(item, authorizationFields, func(name string, v *fastjson.Value) error {
			switch name {
			case "team_id":
				return ar.str(v, &a.TeamID)
			case "enterprise_id":
				return ar.str(v, &a.EnterpriseID)
			case "is_enterprise_install":
				switch v.Type() {
				case fastjson.TypeTrue:
					a.IsEnterpriseInstall = true
				case fastjson.TypeFalse:
					a.IsEnterpriseInstall = false
				case fastjson.TypeNull:
				default:
					return errors.New("is_enterprise_install: not a boolean")
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	*as = out
	return nil
}

// fields calls set for each key of object v that names one of names, in
// the body's order (a repeated key's last value wins), matching a key as
// encoding/json does: exactly, else without regard to case. A null v
// sets nothing; any other value but an object is an error.
func fields(v *fastjson.Value, names []string, set func(name string, v *fastjson.Value) error) error {
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	o, err := v.Object()
	if err != nil {
		return err
	}
	o.Visit(func(k []byte, v *fastjson.Value) {
		if err != nil {
			return
		}
		name := ""
		for _, n := range names {
			if string(k) == n {
				name = n
				break
			}
		}
		if name == "" {
			for _, n := range names {
				if bytes.EqualFold(k, []byte(n)) {
					name = n
					break
				}
			}
		}
		if name != "" {
			if e := set(name, v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

// strArena holds the strings read from one body: the parser's buffer
// is reused by the next parse, so each string is copied out, all into one
// buffer the size of the body (the strings of a JSON text, unescaped,
// are no longer than the text), one allocation for the body's strings
// instead of one each.
type strArena struct{ b []byte }

// str reads string v into s; null leaves s as it is.
func (ar *strArena) str(v *fastjson.Value, s *string) error {
	switch v.Type() {
	case fastjson.TypeNull:
		return nil
	case fastjson.TypeString:
		b := v.GetStringBytes()
		switch {
		case len(b) == 0:
			*s = ""
		case cap(ar.b)-len(ar.b) < len(b):
			*s = string(b) // not for a string of the body; kept safe all the same
		default:
			start := len(ar.b)
			ar.b = append(ar.b, b...)
			// Never written again: the buffer only grows within its
			// capacity, after this string.
			*s = unsafe.String(&ar.b[start], len(b))
		}
		return nil
	}
	return errors.New("not a string")
}

func (ar *strArena) strs(v *fastjson.Value, ss *[]string) error {
	if v.Type() == fastjson.TypeNull {
		*ss = nil
		return nil
	}
	items, err := v.Array()
	if err != nil {
		return err
	}
	out := make([]string, len(items))
	for i, item := range items {
		if err := ar.str(item, &out[i]); err != nil {
			return err
		}
	}
	*ss = out
	return nil
}

func integer(v *fastjson.Value, n *int64) error {
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	i, err := v.Int64()
	if err != nil {
		return err
	}
	*n = i
	return nil
}

// surrogateEscape says whether body holds an escape \uD800–\uDFFF.
func surrogateEscape(body []byte) bool {
	for {
		i := bytes.Index(body, []byte(`\u`))
		if i < 0 || i+3 >= len(body) {
			return false
		}
		if c, d := body[i+2], body[i+3]; (c == 'd' || c == 'D') && strings.ContainsRune("89abcdefABCDEF", rune(d)) {
			return true
		}
		body = body[i+2:]
	}
}

// hasControl says whether body holds a byte below 0x20: JSON allows only
// tab, newline and carriage return outside its strings and none inside,
// and Slack sends compact JSON with neither. It looks at eight bytes at a
// time (a byte below 0x20 borrows into its own high bit when 0x20 is
// taken from it, where no byte at or above 0x80 had that bit already):
// a byte at a time cost half a microsecond of a mention's 4.
func hasControl(body []byte) bool {
	const low, high = 0x2020202020202020, 0x8080808080808080
	for len(body) >= 8 {
		x := binary.LittleEndian.Uint64(body)
		if (x-low)&^x&high != 0 {
			return true
		}
		body = body[8:]
	}
	for _, b := range body {
		if b < 0x20 {
			return true
		}
	}
	return false
}
