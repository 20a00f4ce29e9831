package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/plan"
)

// benchPlan is a realistic 64-card plan: one board, every card with a
// body, two acceptance criteria and a role, and a chain of 63 links.
func benchPlan() plan.Envelope {
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Big board", Goal: "Benchmark the approval of a large plan"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{
			TempID: fmt.Sprint("c", i), Title: fmt.Sprintf("Card number %d of the benchmark board", i),
			Body: "Do the thing this card is about, carefully, and say when it is done.", Assignee: "Coder",
			Status: "Backlog", WorkspaceMode: "Direct", AcceptanceCriteria: []string{"It works.", "It is tested."},
			SuggestedSkills: []string{}, Notes: "",
		})
		if i > 0 {
			a.Links = append(a.Links, plan.Link{Card: fmt.Sprint("c", i), DependsOn: fmt.Sprint("c", i-1)})
		}
	}
	return plan.Envelope{Kind: plan.KindProposeActions, Answer: "A big board.", Confidence: 0.9,
		ClarifyingQuestions: []string{}, Assumptions: []string{"One board."}, Actions: []plan.Action{a}}
}

// model is the stand-in model server: it speaks the OpenAI
// chat-completions API (streamed or not) and answers every request with
// the 64-card plan after Delay, or, when Hold is set, not before the
// request is given up (it keeps BobNet's workers out of the ingest
// figures).
type model struct {
	Delay  time.Duration
	Hold   bool
	output string
	calls  atomic.Int64

	mu    sync.Mutex
	spans map[string]span // by the "(ref …)" a request's message carries
	ref   *regexp.Regexp
}

// streamPieces is how many pieces a streamed answer comes in, spread
// evenly over the model's time as a server sends tokens while it writes
// them (batched: a piece is some 80 tokens of the 64-card plan), the
// last one at Delay.
const streamPieces = 64

// span is when the model took a request and when it answered.
type span struct{ Start, End time.Time }

// spanOf is the model call of the request whose message carried ref.
func (m *model) spanOf(ref string) (span, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.spans[ref]
	return s, ok
}

func newModel(delay time.Duration, hold bool) *model {
	raw, _ := json.Marshal(benchPlan())
	return &model{Delay: delay, Hold: hold, output: string(raw), spans: map[string]span{}, ref: regexp.MustCompile(`\(ref ([A-Za-z0-9_-]+)\)`)}
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(openai.ModelsList{Models: []openai.Model{{ID: "bench", Object: "model"}}})
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	m.calls.Add(1)
	start := time.Now()
	ref := ""
	for _, msg := range req.Messages {
		if mm := m.ref.FindStringSubmatch(msg.Content); mm != nil {
			ref = mm[1]
		}
	}
	if m.Hold {
		<-r.Context().Done()
		return
	}
	if req.Stream {
		m.stream(w, r, req, ref, start)
		return
	}
	select {
	case <-time.After(m.Delay):
	case <-r.Context().Done():
		return
	}
	m.answered(ref, start)
	id, created := fmt.Sprint("bench-", time.Now().UnixNano()), time.Now().Unix()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
		ID: id, Object: "chat.completion", Created: created, Model: "bench",
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.output}, FinishReason: openai.FinishReasonStop}},
		Usage:   openai.Usage{PromptTokens: 1000, CompletionTokens: 3000, TotalTokens: 4000},
	})
}

// answered notes the span of the request whose message carried ref.
func (m *model) answered(ref string, start time.Time) {
	if ref != "" {
		m.mu.Lock()
		m.spans[ref] = span{Start: start, End: time.Now()}
		m.mu.Unlock()
	}
}

// stream answers a streamed request the way OpenAI-compatible servers
// do: the plan in streamPieces chunks, each flushed as it is written,
// paced so the last comes at Delay; then a chunk with the finish reason,
// the usage in a chunk of its own when stream_options.include_usage
// asked for it, and [DONE]. The span ends with the last piece.
func (m *model) stream(w http.ResponseWriter, r *http.Request, req openai.ChatCompletionRequest, ref string, start time.Time) {
	id, created := fmt.Sprint("bench-", time.Now().UnixNano()), time.Now().Unix()
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(c openai.ChatCompletionStreamResponse) {
		c.ID, c.Object, c.Created, c.Model = id, "chat.completion.chunk", created, "bench"
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	size := (len(m.output) + streamPieces - 1) / streamPieces
	for i := range streamPieces {
		at := start.Add(m.Delay * time.Duration(i+1) / streamPieces)
		t := time.NewTimer(time.Until(at))
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		piece := m.output[min(i*size, len(m.output)):min((i+1)*size, len(m.output))]
		delta := openai.ChatCompletionStreamChoiceDelta{Content: piece}
		if i == 0 {
			delta.Role = openai.ChatMessageRoleAssistant
		}
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: delta}}})
	}
	m.answered(ref, start)
	send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{FinishReason: openai.FinishReasonStop}}})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: &openai.Usage{PromptTokens: 1000, CompletionTokens: 3000, TotalTokens: 4000}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
