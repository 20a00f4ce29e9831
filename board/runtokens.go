package board

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
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
var placeholderField = regexp.MustCompile(`"token":"` + pendingToken + `([a-z0-9][a-z0-9_-]{0,63}):(run_[a-z0-9]+):(c_[a-z0-9]+):(h_[a-z0-9]+)"`)

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

// maxRunError is how much of a failed attempt's reason is kept.
const maxRunError = 2000

const (
	// setRunToken gives a dispatched card its token and holds it until
	// the run's deadline: a tool that never answers keeps the card until
	// the run times out.
	setRunToken = `UPDATE run_cards rc SET token_hash = $3, lease_until = r.deadline
FROM runs r WHERE r.id = rc.run_id AND rc.run_id = $1 AND rc.card_id = $2`
	selectTokenScope = `SELECT rc.run_id, rc.card_id, b.key || '-' || c.number, rc.runner, rc.token_hash
FROM run_cards rc JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id WHERE rc.token_hash = $1`
	holdTokenCard = `SELECT r.state, rc.review, rc.holder, rc.lease_until IS NOT NULL, c.status, coalesce(rc.token_hash, ''::bytea)
FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id
WHERE rc.run_id = $1 AND rc.card_id = $2 FOR UPDATE OF rc`
)

// DispatchRunCard takes the next card of runner (a "hook:<name>") as
// ClaimRunCard does and, in the same transaction, keeps the hash of the
// token dispatch gives it (an earlier token of the card is refused from
// then on) and writes the outbox rows dispatch makes of it, so the card
// is dispatched exactly once per round however many replicas look: the
// dispatch is the work the claim guards. The card stays held until the
// run's deadline or its output. When dispatch fails (the hook has no
// callbacks), the attempt fails with its reason, as a runner's would; the
// error then wraps ErrNotRunnable and job is the card not dispatched.
func (s *Store) DispatchRunCard(ctx context.Context, runner string, dispatch func(job RunJob) (token string, evs []OutboundEvent, err error)) (job RunJob, ok bool, err error) {
	var undeliverable error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var runID RunID
		var cardID CardID
		job.Holder = newID("h_")
		// The lease is the run's deadline, set below with the token; the
		// claim's own lease only has to outlive the transaction.
		err := tx.QueryRow(ctx, claimRunCard, runner, maxAttempts, "1 hour", job.Holder).Scan(&runID, &cardID, &job.Attempt, &job.Feedback)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		started := "In Progress"
		up, err := changeCard(ctx, tx, CardChange{Card: cardID, Actor: runner, Via: "run", Status: &started})
		if err != nil {
			return err
		}
		job.Card, job.Board = up.Card, up.Board
		if job, _, err = fillJob(ctx, tx, job, runID); err != nil {
			return err
		}
		token, evs, err := dispatch(job)
		if err == nil && len(evs) == 0 {
			err = fmt.Errorf("%s has no callbacks to send the card to", runner)
		}
		if err != nil {
			undeliverable = err
			_, err = tx.Exec(ctx, failRunCard, runID, cardID, truncateError(err.Error()), job.Holder)
			return err
		}
		if _, err := tx.Exec(ctx, setRunToken, runID, cardID, HashRunToken(token)); err != nil {
			return err
		}
		return InsertEvents(ctx, tx, evs)
	})
	switch {
	case err != nil:
		return RunJob{}, false, fmt.Errorf("dispatch a run card: %w", err)
	case undeliverable != nil:
		return job, true, fmt.Errorf("dispatch %s in run %s: %w: %w", job.Card.Handle, job.Run.ID, ErrNotRunnable, undeliverable)
	}
	return job, ok, nil
}

// RunTokenScope finds the card a token was issued for. ErrRunToken when
// no card has it.
func (s *Store) RunTokenScope(ctx context.Context, token string) (TokenScope, error) {
	want := HashRunToken(token)
	var sc TokenScope
	var got []byte
	err := s.pool.QueryRow(ctx, selectTokenScope, want).Scan(&sc.Run, &sc.Card, &sc.Handle, &sc.Runner, &got)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return TokenScope{}, ErrRunToken
	case err != nil:
		return TokenScope{}, fmt.Errorf("card token: %w", err)
	case subtle.ConstantTimeCompare(got, want) != 1:
		return TokenScope{}, ErrRunToken
	}
	return sc, nil
}

// PostRunOutput keeps the output a tool posted for the card it was
// dispatched and moves the card on (see RunOutput.Status), or, for a
// failed attempt, lets go of the card with the reason. It returns the job
// as it is now (the run without its cards, the card and its run card) and
// the card's change (none for a failed attempt). ErrRunToken when the
// token is not the card's current one; ErrNotRunnable when the run has
// ended or the card is not waiting for an output.
func (s *Store) PostRunOutput(ctx context.Context, o RunOutput) (RunJob, CardUpdate, error) {
	var job RunJob
	var up CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state, status string
		var review, held bool
		var hash []byte
		err := tx.QueryRow(ctx, holdTokenCard, o.Run, o.Card).Scan(&state, &review, &job.Holder, &held, &status, &hash)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("card %s in run %s: %w", o.Card, o.Run, ErrNotFound)
		case err != nil:
			return err
		case subtle.ConstantTimeCompare(hash, o.TokenHash) != 1:
			return ErrRunToken
		case state != RunRunning:
			return fmt.Errorf("%w: the run has ended (%s)", ErrNotRunnable, state)
		case !held || status != "In Progress":
			return fmt.Errorf("%w: the card is not waiting for an output (it is in %s)", ErrNotRunnable, status)
		}
		if o.Status == "failed" {
			_, err := tx.Exec(ctx, failRunCard, o.Run, o.Card, truncateError(o.Output), job.Holder)
			return err
		}
		output := o.Output
		if len(output) > MaxOutput {
			output = output[:MaxOutput]
		}
		if _, err := tx.Exec(ctx, saveRunOutput, o.Run, o.Card, output); err != nil {
			return err
		}
		next := "Review"
		if !review && o.Status != "review" {
			next = "Done"
		}
		up, err = changeCard(ctx, tx, CardChange{Card: o.Card, Actor: o.Actor, Via: "run", Status: &next})
		if err != nil {
			return err
		}
		detail, _ := json.Marshal(map[string]any{"run_id": o.Run, "card": o.Card, "runner": o.Actor, "status": next, "bytes": len(output)})
		_, err = tx.Exec(ctx, insertRunAu, o.Actor, "run_card_output", detail, up.Card.BoardID)
		return err
	})
	if err != nil {
		return RunJob{}, CardUpdate{}, fmt.Errorf("output of %s in run %s: %w", o.Card, o.Run, err)
	}
	card, err := readCard(ctx, s.pool, selectCard, o.Card)
	if err != nil {
		return RunJob{}, CardUpdate{}, fmt.Errorf("output of %s in run %s: %w", o.Card, o.Run, err)
	}
	job.Card = card
	b := &job.Board
	if err := s.pool.QueryRow(ctx, selectBoard, card.BoardID).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		return RunJob{}, CardUpdate{}, fmt.Errorf("board of %s: %w", o.Card, err)
	}
	job, _, err = fillJob(ctx, s.pool, job, o.Run)
	return job, up, err
}

// truncateError keeps the start of a failure's reason, cut at a rune.
func truncateError(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxRunError {
		return s
	}
	cut := maxRunError
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// fillJob reads, on q (a transaction), the run of a job (without its
// other cards) and the outputs of the cards the job's card depends on.
func fillJob(ctx context.Context, q querier, job RunJob, runID RunID) (RunJob, bool, error) {
	rows, _ := q.Query(ctx, selectRun+` WHERE id = $1`, runID)
	run, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if err != nil {
		return RunJob{}, false, fmt.Errorf("run %s: %w", runID, err)
	}
	rows, _ = q.Query(ctx, selectJobCards, runID, job.Card.ID)
	cards, err := pgx.CollectRows(rows, scanRunCard)
	if err != nil {
		return RunJob{}, false, fmt.Errorf("cards of run %s: %w", runID, err)
	}
	job.Run = run
	job.Inputs = nil
	for _, c := range cards {
		if c.Card == job.Card.ID {
			job.RunCard = c
		} else {
			job.Inputs = append(job.Inputs, c)
		}
	}
	return job, true, nil
}
