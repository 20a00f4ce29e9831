package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/signing"
)

// The bare implementations are the floors BobNet's figures are measured
// against: each does the least its path must (no token check, no
// policy, no audit, no dedupe or rate limit), in a process of its own,
// on the same Postgres and Redis, timed by the same client.

// bareChannel is the channel the bare approvals' boards are in.
const bareChannel = "console:loadbench-bare"

// bareApprove answers POST /api/v1/proposals/{id}/approve: the plan read
// from Redis (one GET of prefix+id and its JSON decoded), the board, its
// cards and links written in one pgx batch transaction, 200 out.
func bareApprove(rdb redis.UniversalClient, pool *pgxpool.Pool, prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/proposals/")
		id, ok2 := strings.CutSuffix(id, "/approve")
		if !ok || !ok2 || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		raw, err := rdb.Get(r.Context(), prefix+id).Bytes()
		if errors.Is(err, redis.Nil) {
			http.Error(w, "no such proposal", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		var env plan.Envelope
		if err := json.Unmarshal(raw, &env); err != nil || len(env.Actions) == 0 || env.Actions[0].Board == nil {
			http.Error(w, "the stored plan has no board", http.StatusInternalServerError)
			return
		}
		boardID, err := writeBoard(r.Context(), pool, env.Actions[0], id)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"state":"approved","board_id":%q}`, boardID)
	})
}

// writeBoard writes the rows an approval writes, column for column: the
// board with its key, channel and proposal, each card with its criteria,
// skills and notes, and the links; one batch in one transaction.
func writeBoard(ctx context.Context, pool *pgxpool.Pool, a plan.Action, proposal string) (string, error) {
	boardID := "b_" + randomID()
	ids := map[string]string{}
	var cid, temp, title, body, assignee, status, mode, criteria, skills, notes []string
	var pos []int32
	for i, c := range a.Cards {
		id := "c_" + randomID()
		ids[c.TempID] = id
		ac, _ := json.Marshal(append([]string{}, c.AcceptanceCriteria...))
		ss, _ := json.Marshal(append([]string{}, c.SuggestedSkills...))
		cid, temp, title, body = append(cid, id), append(temp, c.TempID), append(title, c.Title), append(body, c.Body)
		assignee, status, mode, pos = append(assignee, c.Assignee), append(status, c.Status), append(mode, c.WorkspaceMode), append(pos, int32(i))
		criteria, skills, notes = append(criteria, string(ac)), append(skills, string(ss)), append(notes, c.Notes)
	}
	var from, to []string
	for _, l := range a.Links {
		from, to = append(from, ids[l.Card]), append(to, ids[l.DependsOn])
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO boards (id, name, goal, key, channel, proposal_id, thread) VALUES ($1, $2, $3, bobnet_board_key(bobnet_tenant($5), $4), $5, $6, $7)`,
			boardID, a.Board.Name, a.Board.Goal, boardKey(a.Board.Name), bareChannel, proposal, "")
		batch.Queue(`INSERT INTO cards (id, board_id, position, number, temp_id, title, body, assignee, status, workspace_mode,
    acceptance_criteria, suggested_skills, notes, proposal_id)
SELECT u.id, $1, u.pos, u.pos + 1, u.temp, u.title, u.body, u.assignee, u.status, u.mode, u.ac::jsonb, u.ss::jsonb, u.notes, $13
FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
    AS u(id, pos, temp, title, body, assignee, status, mode, ac, ss, notes)`,
			boardID, cid, pos, temp, title, body, assignee, status, mode, criteria, skills, notes, proposal)
		batch.Queue(`INSERT INTO card_links (board_id, card_id, depends_on) SELECT $1, f, t FROM unnest($2::text[], $3::text[]) AS u(f, t)`, boardID, from, to)
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return "", fmt.Errorf("write board: %w", err)
	}
	return boardID, nil
}

// boardKey is a board key from a name as BobNet makes one: the longest
// word that starts with a letter, cut to four and upper-cased ("Big
// board" is BOAR); CARD when there is none.
func boardKey(name string) string {
	best := ""
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))) }) {
		if len(w) > len(best) && unicode.IsLetter(rune(w[0])) {
			best = w
		}
	}
	if best == "" {
		return "CARD"
	}
	return strings.ToUpper(best[:min(4, len(best))])
}

// randomID is 26 lower-case base32 characters of 128 random bits, the
// shape of BobNet's board and card ids.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// maxEventBody is the most of a Slack event the bare handler reads, as
// BobNet's.
const maxEventBody = 1 << 20

// bareIngest is the floor of /slack/events: the body read, its Slack
// signature checked, one XADD of it to a stream on the same Redis, 200.
// With more than one stream (a cluster's shards, each its own slot) the
// body's FNV hash picks one, as BobNet's channel picks its shard; with
// wait, the XADD is followed by WAIT 1 on the stream's master, and an
// event no replica confirmed is answered 503: the least a durable
// admission costs where Redis replicates.
func bareIngest(rdb redis.UniversalClient, streams []string, wait bool, secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
		if err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		if signing.VerifySlack(r.Header, secret, body, time.Now()) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		stream := streams[0]
		if len(streams) > 1 {
			h := fnv.New32a()
			h.Write(body)
			stream = streams[h.Sum32()%uint32(len(streams))]
		}
		add := &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": body}}
		if !wait {
			err = rdb.XAdd(r.Context(), add).Err()
		} else {
			err = addAndWait(r.Context(), rdb, add)
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// addAndWait sends the XADD and WAIT 1 in one pipeline to the stream's
// master (on a cluster, the master of its slot: WAIT names no key).
func addAndWait(ctx context.Context, rdb redis.UniversalClient, add *redis.XAddArgs) error {
	var node redis.Cmdable = rdb
	if c, ok := rdb.(*redis.ClusterClient); ok {
		m, err := c.MasterForKey(ctx, add.Stream)
		if err != nil {
			return err
		}
		node = m
	}
	pipe := node.Pipeline()
	pipe.XAdd(ctx, add)
	n := pipe.Do(ctx, "wait", 1, 1000)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if v, _ := n.Int(); v < 1 {
		return errors.New("no replica confirmed the entry")
	}
	return nil
}

// bareStreams names a bare ingest's n streams: stream itself, or n
// streams each tagged with its index, so each hashes to a slot of its
// own on a cluster.
func bareStreams(stream string, n int) []string {
	if n <= 1 {
		return []string{stream}
	}
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%s:{%d}", stream, i)
	}
	return s
}

// barePreview is the floor of a preview: workers each reading the stream
// through a consumer group (XREADGROUP), calling the model with the
// entry's text, and posting one chat.postMessage with its answer to the
// entry's channel, then XACK.
type barePreview struct {
	rdb                redis.UniversalClient
	stream, group      string
	modelURL, slackURL string
	client             *http.Client
	onError            func(error)
}

// isBusyGroup says that the consumer group exists already.
func isBusyGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") }

// run runs workers on the consumer group (made beforehand) until ctx ends.
func (b *barePreview) run(ctx context.Context, workers int) error {
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := b.once(ctx, fmt.Sprint("w", i)); err != nil && ctx.Err() == nil {
					b.onError(err)
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// once takes one entry, if one comes within a second, and answers it.
func (b *barePreview) once(ctx context.Context, consumer string) error {
	res, err := b.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: b.group, Consumer: consumer, Streams: []string{b.stream, ">"}, Count: 1, Block: time.Second}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("xreadgroup: %w", err)
	}
	for _, s := range res {
		for _, m := range s.Messages {
			channel, _ := m.Values["channel"].(string)
			text, _ := m.Values["text"].(string)
			answer, err := b.ask(ctx, text)
			if err != nil {
				return err
			}
			if err := b.post(ctx, channel, answer); err != nil {
				return err
			}
			if err := b.rdb.XAck(ctx, b.stream, b.group, m.ID).Err(); err != nil {
				return fmt.Errorf("xack: %w", err)
			}
		}
	}
	return nil
}

// ask is one chat completion; it returns the answer's content.
func (b *barePreview) ask(ctx context.Context, text string) (string, error) {
	req, _ := json.Marshal(map[string]any{"model": "bench", "messages": []map[string]string{{"role": "user", "content": text}}})
	resp, err := b.do(ctx, b.modelURL+"/chat/completions", "application/json", req)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(resp, &out); err != nil || len(out.Choices) == 0 {
		return "", fmt.Errorf("model: no answer in %.100q", resp)
	}
	return out.Choices[0].Message.Content, nil
}

// post is one chat.postMessage of a preview with an Approve button.
func (b *barePreview) post(ctx context.Context, channel, answer string) error {
	var env plan.Envelope
	if err := json.Unmarshal([]byte(answer), &env); err != nil {
		return fmt.Errorf("the model's plan: %w", err)
	}
	blocks, _ := json.Marshal([]any{
		map[string]any{"type": "section", "text": map[string]string{"type": "mrkdwn", "text": env.Answer}},
		map[string]any{"type": "actions", "elements": []any{map[string]any{"type": "button", "action_id": previewMark, "text": map[string]string{"type": "plain_text", "text": "Approve and create"}}}},
	})
	form := url.Values{"channel": {channel}, "text": {env.Answer}, "blocks": {string(blocks)}}
	resp, err := b.do(ctx, b.slackURL+"chat.postMessage", "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return fmt.Errorf("chat.postMessage: %w", err)
	}
	if !bytes.Contains(resp, []byte(`"ok":true`)) {
		return fmt.Errorf("chat.postMessage: %.100q", resp)
	}
	return nil
}

func (b *barePreview) do(ctx context.Context, u, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return out, err
}
