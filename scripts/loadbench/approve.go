package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// approveCount is how many proposals each approve round decides.
const approveCount = 40

// approveGap is the pause before each timed approval.
const approveGap = 30 * time.Millisecond

// newClient is the harness's HTTP client, the same for every server, so
// BobNet and the bare implementations are timed alike.
func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// call sends method url with body (JSON) and the bench token; it returns
// the status and the answer.
func call(ctx context.Context, c *http.Client, method, url string, body any) (int, []byte, error) {
	return callAs(ctx, c, benchToken, method, url, body)
}

// callAs is call with token.
func callAs(ctx context.Context, c *http.Client, token, method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// propose makes one proposal the way a person does: a message in a fresh
// console channel, planned by a worker with the stand-in model, until its
// request names the proposal.
func propose(ctx context.Context, c *http.Client, base, token, channel, user string) (string, error) {
	code, out, err := callAs(ctx, c, token, http.MethodPost, base+"/api/v1/channels/"+channel+"/messages",
		map[string]string{"user": user, "text": "plan our daily research newspaper with a big board"})
	if err != nil || code != http.StatusAccepted {
		return "", fmt.Errorf("post message in %s: %d %s %v", channel, code, out, err)
	}
	var req struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(out, &req); err != nil || req.RequestID == "" {
		return "", fmt.Errorf("post message: no request_id in %s", out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		code, out, err := callAs(ctx, c, token, http.MethodGet, base+"/api/v1/requests/"+req.RequestID, nil)
		if err != nil || code != http.StatusOK {
			return "", fmt.Errorf("request %s: %d %s %v", req.RequestID, code, out, err)
		}
		var st struct {
			State      string `json:"state"`
			ProposalID string `json:"proposal_id"`
			Error      string `json:"error"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return "", fmt.Errorf("request %s: %w", req.RequestID, err)
		}
		if st.ProposalID != "" {
			return st.ProposalID, nil
		}
		if st.State == "done" || st.State == "failed" {
			return "", fmt.Errorf("request %s ended %s with no proposal: %s", req.RequestID, st.State, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("request %s: no proposal within a minute", req.RequestID)
}

// proposerTokens makes n API tokens that may post messages and read
// requests: BobNet takes at most 60 messages a minute from one client,
// and a round makes 40 proposals in seconds, so the proposal of index i
// is made with token i, as if by 40 people.
func proposerTokens(ctx context.Context, c *http.Client, base, run string, n int) ([]string, error) {
	tokens := make([]string, n)
	for i := range tokens {
		code, out, err := call(ctx, c, http.MethodPost, base+"/api/v1/tokens",
			map[string]any{"name": fmt.Sprintf("lb-%s-%d", run, i), "scopes": []string{"read", "propose"}})
		var tok struct {
			Secret string `json:"secret"`
		}
		if err == nil {
			err = json.Unmarshal(out, &tok)
		}
		if err != nil || code != http.StatusCreated || tok.Secret == "" {
			return nil, fmt.Errorf("create an API token: %d %s %v", code, out, err)
		}
		tokens[i] = tok.Secret
	}
	return tokens, nil
}

// approveRound makes count proposals through BobNet's pipeline and
// stores as many plans for the bare implementation, then approves each
// pair back to back, alternating which goes first, and returns the
// latencies of each side.
func approveRound(ctx context.Context, c *http.Client, tokens []string, bob, bare string, rdb redis.UniversalClient, barePrefix, run string, round, count int) (bobLat, bareLat []time.Duration, err error) {
	ids, users, err := proposeRound(ctx, c, tokens, bob, run, round, count)
	if err != nil {
		return nil, nil, err
	}
	planJSON, _ := json.Marshal(benchPlan())
	bareIDs := make([]string, count)
	for i := range count {
		bareIDs[i] = fmt.Sprintf("p_bare_%s_%d_%d", run, round, i)
		if err := rdb.Set(ctx, barePrefix+bareIDs[i], planJSON, time.Hour).Err(); err != nil {
			return nil, nil, fmt.Errorf("store the bare plan: %w", err)
		}
	}
	approve := func(base, id, user string) (time.Duration, error) { return approveOne(ctx, c, base, id, user) }
	for i := range count {
		first := (i+round)%2 == 0
		for _, bobTurn := range []bool{first, !first} {
			if bobTurn {
				d, err := approve(bob, ids[i], users[i])
				if err != nil {
					return nil, nil, err
				}
				bobLat = append(bobLat, d)
			} else {
				d, err := approve(bare, bareIDs[i], users[i])
				if err != nil {
					return nil, nil, err
				}
				bareLat = append(bareLat, d)
			}
		}
	}
	return bobLat, bareLat, nil
}

// proposeRound makes count proposals through the pipeline of the BobNet
// at base, eight at a time, each in a fresh console channel of run and
// round, and returns their ids and the users who asked.
func proposeRound(ctx context.Context, c *http.Client, tokens []string, base, run string, round, count int) (ids, users []string, err error) {
	ids = make([]string, count)
	users = make([]string, count)
	var wg sync.WaitGroup
	errs := make(chan error, count)
	sem := make(chan struct{}, 8)
	for i := range count {
		users[i] = fmt.Sprintf("u%d", i)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			id, err := propose(ctx, c, base, tokens[i%len(tokens)], fmt.Sprintf("lb-%s-%d-%d", run, round, i), users[i])
			ids[i] = id
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, nil, err
	}
	return ids, users, nil
}

// approveOne approves proposal id at base as user and returns how long
// the answer took. A pause comes first, so neither side of a pair is
// timed while the other's work after its answer (BobNet's announcement,
// outbox and live feed) still runs.
func approveOne(ctx context.Context, c *http.Client, base, id, user string) (time.Duration, error) {
	time.Sleep(approveGap)
	t0 := time.Now()
	code, out, err := call(ctx, c, http.MethodPost, base+"/api/v1/proposals/"+id+"/approve", map[string]string{"user": user})
	d := time.Since(t0)
	if err != nil || code != http.StatusOK {
		return 0, fmt.Errorf("approve %s at %s: %d %s %v", id, base, code, out, err)
	}
	return d, nil
}
