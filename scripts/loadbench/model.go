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
	select {
	case <-time.After(m.Delay):
	case <-r.Context().Done():
		return
	}
	if ref != "" {
		m.mu.Lock()
		m.spans[ref] = span{Start: start, End: time.Now()}
		m.mu.Unlock()
	}
	id, created := fmt.Sprint("bench-", time.Now().UnixNano()), time.Now().Unix()
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []openai.ChatCompletionStreamChoice{
			{Delta: openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant, Content: m.output}},
			{FinishReason: openai.FinishReasonStop},
		} {
			b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: "bench", Choices: []openai.ChatCompletionStreamChoice{c}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
		ID: id, Object: "chat.completion", Created: created, Model: "bench",
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.output}, FinishReason: openai.FinishReasonStop}},
		Usage:   openai.Usage{PromptTokens: 1000, CompletionTokens: 3000, TotalTokens: 4000},
	})
}
