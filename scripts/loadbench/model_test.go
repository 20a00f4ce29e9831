package main

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The stand-in model streams as a server does: its pieces come spread
// over its time (the first well before the last), they join into the
// plan, and the usage comes only when asked for.
func TestModelStreamsOverItsTime(t *testing.T) {
	m := newModel(400*time.Millisecond, false)
	srv := httptest.NewServer(m)
	defer srv.Close()
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL + "/v1"
	c := openai.NewClientWithConfig(cfg)
	for _, usage := range []bool{true, false} {
		req := openai.ChatCompletionRequest{Model: "bench", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "plan (ref R1)"}}}
		if usage {
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
		start := time.Now()
		s, err := c.CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		var first, last time.Duration
		pieces, tokens := 0, 0
		for {
			resp, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != nil {
				tokens = resp.Usage.TotalTokens
			}
			for _, ch := range resp.Choices {
				if ch.Delta.Content != "" {
					if pieces == 0 {
						first = time.Since(start)
					}
					last = time.Since(start)
					pieces++
					b.WriteString(ch.Delta.Content)
				}
			}
		}
		s.Close()
		if b.String() != m.output {
			t.Fatalf("the pieces joined are not the plan: %.80q…", b.String())
		}
		if pieces != streamPieces || first > 100*time.Millisecond || last < 390*time.Millisecond {
			t.Errorf("%d pieces, first at %s, last at %s; want %d spread over 400ms", pieces, first, last, streamPieces)
		}
		if want := map[bool]int{true: 4000, false: 0}[usage]; tokens != want {
			t.Errorf("usage asked %v: tokens %d, want %d", usage, tokens, want)
		}
		if sp, ok := m.spanOf("R1"); !ok || sp.End.Sub(sp.Start) < 390*time.Millisecond {
			t.Errorf("span %+v, %v: want the model's time", sp, ok)
		}
	}
}
