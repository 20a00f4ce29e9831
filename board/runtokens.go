package board

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
)

// ErrRunToken means a card token is unknown: never issued, or replaced
// by a later dispatch of its card.
var ErrRunToken = errors.New("unknown or replaced card token")

// runTokenPrefix marks BobNet's card tokens, so one found in a log or a
// repository is recognised for what it is.
const runTokenPrefix = "bnrc_"

// RunToken is the token of one dispatch of a card: an HMAC, under the
// hook's key, of the run, the card and the dispatch's holder. Only the
// key's owner can make it, and the holder is never sent, so neither a
// reader of the database (which keeps the holder and the token's hash)
// nor the tool (which has the token) can make another dispatch's token;
// each new dispatch has a new holder, hence a new token.
func RunToken(key []byte, run RunID, card CardID, holder string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("bobnet run card token\x00" + string(run) + "\x00" + string(card) + "\x00" + holder))
	return runTokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// pendingToken marks where a card.dispatched body's token goes: the body
// is stored in the outbox with this placeholder, and the sender puts the
// token in (ExpandRunTokens), so the token itself is never stored.
const pendingToken = "bnrc-pending:"

// RunTokenPlaceholder is what a dispatch's body holds instead of its
// token, naming what makes it.
func RunTokenPlaceholder(hook string, run RunID, card CardID, holder string) string {
	return pendingToken + hook + ":" + string(run) + ":" + string(card) + ":" + holder
}

// placeholderField finds a placeholder as a JSON "token" value; JSON
// escapes every quote inside a string, so text of the card cannot make
// one.
var placeholderField = regexp.MustCompile(`"token":"` + pendingToken + `([a-z0-9][a-z0-9_-]*):(run_[a-z0-9]+):(c_[a-z0-9]+):(h_[a-z0-9]+)"`)

// ExpandRunTokens puts the tokens into a card.dispatched body, each made
// with its hook's key from keys; the same body always expands to the same
// bytes, so a retry carries what the first attempt did.
func ExpandRunTokens(body []byte, keys map[string][]byte) ([]byte, error) {
	var missing error
	out := placeholderField.ReplaceAllFunc(body, func(m []byte) []byte {
		g := placeholderField.FindSubmatch(m)
		key, ok := keys[string(g[1])]
		if !ok {
			missing = fmt.Errorf("no card token key for hook %q", g[1])
			return m
		}
		return []byte(`"token":"` + RunToken(key, RunID(g[2]), CardID(g[3]), string(g[4])) + `"`)
	})
	return out, missing
}

// HashRunToken is what the store keeps of a card token: its SHA-256. The
// token is a 256-bit HMAC, unguessable, so a plain digest is enough; a
// slow hash would only slow every output down.
func HashRunToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// TokenScope is the one card of one run a card token may post the output
// of.
type TokenScope struct {
	Run    RunID
	Card   CardID
	Handle string
	// Runner is the card's runner (hook:<name>), whom its output is
	// recorded as.
	Runner string
}

// RunOutput is what a tool posts for the card it was dispatched.
type RunOutput struct {
	Run       RunID
	Card      CardID
	TokenHash []byte
	// Actor is who the card's change is recorded as: its runner.
	Actor  string
	Output string
	// Status is "" (as the profile says: Review, or Done without review),
	// "review" (Review, whatever the profile), "done" (Done when the
	// profile wants no review; a tool cannot skip a review people asked
	// for, so otherwise Review) or "failed" (the attempt failed, the
	// output saying why; the card is dispatched again until its attempts
	// run out, and then the run stops).
	Status string
}
