package soak

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// work is the hook runner working a dispatched card: it answers mostly
// within a moment, sometimes late (seconds, or a quarter minute), and
// posts the output with the card's token, to another replica when the one
// named is down, until BobNet answers.
func (rc *receiver) work(d dispatch, callbackURL, token string) {
	switch n := rand.IntN(100); {
	case n < 10:
		time.Sleep(15 * time.Second)
	case n < 30:
		time.Sleep(time.Duration(2+rand.IntN(4)) * time.Second)
	default:
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
	}
	u, err := url.Parse(callbackURL)
	if err != nil {
		return
	}
	body := fmt.Appendf(nil, `{"output":"Published by the hook runner: run %s card %s round %d."}`, d.Run, d.Card, d.Round)
	for try := 0; try < 60; try++ {
		rc.mu.Lock()
		bases := rc.bases
		rc.mu.Unlock()
		target := callbackURL
		if try > 0 && len(bases) > 0 {
			target = bases[rand.IntN(len(bases))] + u.Path
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", target, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode < 500 {
				rc.mu.Lock()
				rc.outputs = append(rc.outputs, hookOutput{Run: d.Run, Card: d.Card, Round: d.Round, Status: resp.StatusCode})
				rc.mu.Unlock()
				return
			}
		}
		time.Sleep(time.Second)
	}
}

// dispatched is every card.dispatched accepted, by webhook-id, and the
// outputs posted back.
func (rc *receiver) dispatched() (map[string]dispatch, []hookOutput) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]dispatch, len(rc.dispatches))
	for k, v := range rc.dispatches {
		out[k] = v
	}
	return out, append([]hookOutput(nil), rc.outputs...)
}

func (rc *receiver) setReplicas(bases []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.bases = bases
}
