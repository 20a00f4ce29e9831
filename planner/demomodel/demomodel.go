// Package demomodel is a canned stand-in for a language model, for trying
// BobNet with no model server (`make demo`). It speaks the OpenAI
// chat-completions API: a planning request gets one of a few fixed model
// outputs read from a folder (testdata/plans in the repository), a run's
// request to work a card gets a short Markdown article from another
// (testdata/demo/articles), and the models list answers BobNet's start-up
// probe. Each output is labelled as canned so nobody mistakes it for a
// model's work.
package demomodel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Name is the model name the demo model answers as.
const Name = "bobnet-demo (canned)"

// Label is said in every answer, so the preview shows where the plan came
// from.
const Label = "Canned demo model: a fixed example plan, not written for your request. Point OPENAI_BASE_URL at a real model for real plans."

// The outputs it serves, by what the request looks like.
const (
	planFile     = "newspaper.json"
	answerFile   = "valid-answer.json"
	refuseFile   = "valid-refuse.json"
	clarifyFile  = "valid-clarify.json"
	maxBodyBytes = 4 << 20
)

// DailySchedule is the schedule_board the demo model adds to its canned
// plans that create a board: the demo newspaper runs every morning.
var DailySchedule = map[string]any{"type": "schedule_board", "cron": "0 6 * * *", "timezone": "UTC"}

// Model answers chat-completion requests with canned outputs.
type Model struct {
	outputs  map[string]string
	articles []article
	// pace is how long a streamed answer takes from its first piece to
	// its last, so a demo shows the plan drafted card by card.
	pace time.Duration
}

// Load reads the canned plan outputs from plansDir and the canned
// articles (*.md) from articlesDir, and labels each one. A streamed
// answer is spread over pace (0: sent at once).
func Load(plansDir, articlesDir string, pace time.Duration) (*Model, error) {
	articles, err := loadArticles(articlesDir)
	if err != nil {
		return nil, err
	}
	m := &Model{outputs: map[string]string{}, articles: articles, pace: pace}
	dir := plansDir
	for _, name := range []string{planFile, answerFile, refuseFile, clarifyFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("demo model: %w", err)
		}
		labelled, err := label(b)
		if err != nil {
			return nil, fmt.Errorf("demo model: %s: %w", name, err)
		}
		m.outputs[name] = labelled
	}
	return m, nil
}

// label adds Label to an output: to a plan's assumptions, where the preview
// lists them, and in front of any other kind's answer. A plan that creates
// a board and has no schedule_board gets DailySchedule.
func label(raw []byte) (string, error) {
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", err
	}
	if env["kind"] == "propose_actions" {
		as, _ := env["assumptions"].([]any)
		env["assumptions"] = append([]any{Label}, as...)
		actions, _ := env["actions"].([]any)
		creates, scheduled := false, false
		for _, a := range actions {
			a, _ := a.(map[string]any)
			creates = creates || a["type"] == "create_board" || a["type"] == "create_board_with_cards"
			scheduled = scheduled || a["type"] == "schedule_board"
		}
		if creates && !scheduled {
			env["actions"] = append(actions, DailySchedule)
		}
	} else {
		a, _ := env["answer"].(string)
		env["answer"] = "[" + Label + "] " + a
	}
	b, err := json.Marshal(env)
	return string(b), err
}

// Choose picks the canned output for a request's user message: the plan
// again for a revision, a refusal for destructive words, an answer for a
// question, questions back for a request too short to plan, and the
// newspaper plan otherwise.
func (m *Model) Choose(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	switch {
	case strings.Contains(t, "feedback on the previous plan:"):
		return m.outputs[planFile]
	case strings.Contains(t, "delete") || strings.Contains(t, "archive"):
		return m.outputs[refuseFile]
	case strings.HasSuffix(t, "?"):
		return m.outputs[answerFile]
	case len(strings.Fields(t)) < 3:
		return m.outputs[clarifyFile]
	}
	return m.outputs[planFile]
}

// ServeHTTP answers POST …/chat/completions, streamed when asked, and
// GET …/models (BobNet's start-up probe).
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(openai.ModelsList{Models: []openai.Model{{ID: Name, Object: "model", OwnedBy: "bobnet"}}})
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "the demo model only answers POST /v1/chat/completions and GET /v1/models")
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		return
	}
	var last string
	for _, msg := range req.Messages {
		if msg.Role == openai.ChatMessageRoleUser {
			last = msg.Content
		}
	}
	content := m.Choose(last)
	if title, ok := runnerPrompt(req.Messages); ok {
		content = m.Article(title)
	}
	id, created := fmt.Sprintf("demo-%d", time.Now().UnixNano()), time.Now().Unix()
	if req.Stream {
		m.stream(r.Context(), w, id, created, content, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
		ID: id, Object: "chat.completion", Created: created, Model: Name,
		Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content}, FinishReason: openai.FinishReasonStop}},
		Usage:   openai.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2},
	})
}

// streamPieces is how many pieces a paced streamed answer is sent in.
const streamPieces = 40

// stream sends content as servers that stream do: its pieces, spread
// over the model's pace (one piece when it has none), then a closing
// chunk, and the usage in a chunk of its own when asked for it. A client
// that goes away ends it.
func (m *Model) stream(ctx context.Context, w http.ResponseWriter, id string, created int64, content string, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta openai.ChatCompletionStreamChoice) {
		b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: Name, Choices: []openai.ChatCompletionStreamChoice{delta}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	pieces := []string{content}
	if m.pace > 0 {
		pieces = split(content, streamPieces)
	}
	for i, p := range pieces {
		if i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(m.pace / time.Duration(len(pieces))):
			}
		}
		d := openai.ChatCompletionStreamChoiceDelta{Content: p}
		if i == 0 {
			d.Role = openai.ChatMessageRoleAssistant
		}
		send(openai.ChatCompletionStreamChoice{Delta: d})
	}
	send(openai.ChatCompletionStreamChoice{FinishReason: openai.FinishReasonStop})
	if usage {
		b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: Name,
			Choices: []openai.ChatCompletionStreamChoice{}, Usage: &openai.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// split cuts s into at most n pieces of about equal length, on character
// boundaries.
func split(s string, n int) []string {
	r := []rune(s)
	size := max(1, (len(r)+n-1)/n)
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": "invalid_request_error"}})
}
