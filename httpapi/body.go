package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/plan"
)

// ValidName reports whether s names who acts, as every route takes it:
// 1 to 64 letters, digits or . _ @ -. A loop, not a regular expression,
// whose counted repetition of Unicode classes costs memory for the life
// of the process.
func ValidName(s string) bool {
	n := 0
	for _, r := range s {
		n++
		if n > 64 || !(unicode.IsLetter(r) || unicode.IsNumber(r) || strings.ContainsRune("._@-", r)) {
			return false
		}
	}
	return n > 0
}

// Errors of strict JSON decoding; check with errors.Is.
var (
	// ErrTrailingData means something other than whitespace follows the
	// body's JSON value: a second value, or a stray brace.
	ErrTrailingData = errors.New("more than one value: something other than whitespace follows the JSON value")
	// ErrDuplicateKey means an object names a key twice (or two keys that
	// encoding/json would take for the same field, such as "user" and
	// "User"): which one counts would depend on the parser.
	ErrDuplicateKey = errors.New("a key appears twice")
)

// Decode reads a JSON body into v: at most MaxBody bytes, JSON only, and
// strictly (see decodeStrict). When it reports false it has answered.
func Decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return DecodeUpTo(w, r, v, MaxBody)
}

// DecodeUpTo is Decode with a body of at most limit bytes, for the few
// routes whose bodies are larger by nature (a runner's output).
func DecodeUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	// JSON only, and said so: a form or a text/plain body (what a web page
	// can send across sites without asking) is refused.
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		httpjson.Error(w, http.StatusUnsupportedMediaType, "send JSON with Content-Type: application/json")
		return false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpjson.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d KiB", limit>>10))
		return false
	case err != nil:
		httpjson.Error(w, http.StatusBadRequest, "could not read the request body")
		return false
	}
	if err := decodeStrict(data, v); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// decodeStrict decodes exactly one JSON value from data into v: nothing
// but whitespace after it, no unknown fields, and no key twice in any
// object. Every reading of such a body is the same reading, so the "user"
// a handler checks is the user it acts as.
func decodeStrict(data []byte, v any) error {
	if err := uniqueKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return ErrTrailingData
	}
	return nil
}

// uniqueKeys walks data's tokens and refuses an object that names a key
// twice, comparing keys as encoding/json matches them to fields (case
// folded as encoding/json folds). Syntax errors are left to the decoder.
func uniqueKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error the decoder will report
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return nil
				}
				stack[len(stack)-1].wantKey = stack[len(stack)-1].object
				continue
			}
			key, _ := tok.(string)
			folded := foldKey(key)
			if top.keys[folded] {
				return fmt.Errorf("%w: %q", ErrDuplicateKey, key)
			}
			top.keys[folded] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object wants its next key.
		if len(stack) == 0 {
			return nil
		}
		stack[len(stack)-1].wantKey = stack[len(stack)-1].object
	}
}

// foldKey folds key as encoding/json does to match keys to fields
// (upper case of the lower case, rune by rune), so two keys it would take
// for the same field fold alike ("user", "USER", "uſer").
func foldKey(key string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, key)
}

// ValidUser checks the "user" of a body: a name, and, when the request
// came with a token bound to a user, that user. It answers when it
// reports false.
func ValidUser(w http.ResponseWriter, r *http.Request, user string) bool {
	if !ValidName(user) {
		httpjson.Error(w, http.StatusBadRequest, `"user" is required: 1 to 64 letters, digits or . _ @ -`)
		return false
	}
	if err := apitoken.ActsFor(r.Context(), user); err != nil {
		out := map[string]any{"error": err.Error()}
		if ue := (*apitoken.UserError)(nil); errors.As(err, &ue) {
			out["token"] = ue.Token
		}
		httpjson.Write(w, http.StatusForbidden, out)
		return false
	}
	return true
}

// PlainText refuses a text field with control characters, by the check
// plans and cards get (plan.CheckText): a NUL would otherwise fail
// later, in Postgres, as an outage. It answers when it reports false.
func PlainText(w http.ResponseWriter, field, s string) bool {
	if _, err := plan.CheckText(s, false); err != nil {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("%q %v; send plain text", field, err))
		return false
	}
	return true
}
