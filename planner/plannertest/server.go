// Package plannertest is a scripted OpenAI-compatible chat server for tests:
// it answers as OpenAI or Ollama do, streams when asked, fails when told,
// and records every request so tests can look at the prompts.
package plannertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer.
type Reply struct {
	// Content is the model's text.
	Content string
	// Status, when not 0 or 200, answers with an OpenAI-style error.
	Status int
	// Message is the error message for Status.
	Message string
	// Delay waits before answering (or until the request is abandoned).
	Delay time.Duration
	// Hang blocks until the client gives up.
	Hang bool
	// RejectJSONMode answers 400 when the request asks for response_format,
	// as servers without JSON mode do, and otherwise answers normally.
	RejectJSONMode bool
	// Ollama answers with Ollama's quirks: its fingerprint, and a stream
	// ending in an empty chunk with finish_reason "stop".
	Ollama bool
	// Chunks splits a streamed answer into this many pieces (default 5).
	Chunks int
	// ChunkDelay waits between a streamed answer's pieces, as a model
	// writing slowly does (or until the request is abandoned).
	ChunkDelay time.Duration
	// IgnoreStream answers a streamed request with a plain JSON answer,
	// as servers that do not stream do; RefuseStream answers it with
	// that status (such as 404 or 501) instead.
	IgnoreStream bool
	RefuseStream int
	// Tokens, when set, is the total_tokens the answer reports; NoUsage
	// leaves usage out, as some servers do.
	Tokens  int
	NoUsage bool
}

// Server is a scripted chat-completions server.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	script   []Reply
	handler  func(openai.ChatCompletionRequest) Reply
	requests []openai.ChatCompletionRequest
}

// NewServer starts a server that answers with script, in order. After the
// script runs out it uses the Handle function, or answers 500.
func NewServer(t testing.TB, script ...Reply) *Server {
	t.Helper()
	s := &Server{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure a client with (ending in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Handle answers every request not covered by the script.
func (s *Server) Handle(f func(openai.ChatCompletionRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Push appends replies to the script.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.requests...)
}

func (s *Server) next(req openai.ChatCompletionRequest) (Reply, bool) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if len(s.script) > 0 {
		r := s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		return r, true
	}
	h := s.handler
	s.mu.Unlock()
	if h == nil {
		return Reply{}, false
	}
	return h(req), true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{"id": "test-model", "object": "model", "owned_by": "plannertest"}}})
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		writeError(w, http.StatusNotFound, "not found: "+r.URL.Path)
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	reply, ok := s.next(req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "plannertest: script exhausted")
		return
	}
	if reply.Hang {
		<-r.Context().Done()
		return
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.RejectJSONMode && req.ResponseFormat != nil {
		writeError(w, http.StatusBadRequest, "unsupported parameter: response_format")
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		msg := reply.Message
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, msg)
		return
	}
	fingerprint := "fp_plannertest"
	if reply.Ollama {
		fingerprint = "fp_ollama"
	}
	if req.Stream && reply.RefuseStream != 0 {
		writeError(w, reply.RefuseStream, "streaming is not supported")
		return
	}
	created := time.Now().Unix()
	if !req.Stream || reply.IgnoreStream {
		answer := map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": created, "model": req.Model,
			"system_fingerprint": fingerprint,
			"choices":            []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": reply.Content}, "finish_reason": "stop"}},
			"usage":              usage(reply),
		}
		if reply.NoUsage {
			delete(answer, "usage")
		}
		writeJSON(w, http.StatusOK, answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	n := reply.Chunks
	if n <= 0 {
		n = 5
	}
	chunk := func(content string, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": fingerprint,
			"choices":            []map[string]any{{"index": 0, "delta": map[string]any{"role": "assistant", "content": content}, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for i, piece := range split(reply.Content, n) {
		if i > 0 && reply.ChunkDelay > 0 {
			select {
			case <-time.After(reply.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		chunk(piece, nil)
	}
	if reply.Ollama {
		chunk("", "stop")
	}
	if !reply.NoUsage && req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		// The usage comes last, in a chunk with no choices, as OpenAI
		// sends it: only when asked with stream_options.include_usage.
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{}, "usage": usage(reply),
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// usage is what reply says it cost: Tokens, or 100 for the prompt and
// a token for every four characters of the answer.
func usage(reply Reply) map[string]any {
	if reply.Tokens > 0 {
		return map[string]any{"prompt_tokens": reply.Tokens / 2, "completion_tokens": reply.Tokens - reply.Tokens/2, "total_tokens": reply.Tokens}
	}
	return map[string]any{"prompt_tokens": 100, "completion_tokens": len(reply.Content) / 4, "total_tokens": 100 + len(reply.Content)/4}
}

// split cuts s into n pieces of about equal size, on rune boundaries.
func split(s string, n int) []string {
	rs := []rune(s)
	size := (len(rs) + n - 1) / n
	if size == 0 {
		return []string{""}
	}
	var out []string
	for i := 0; i < len(rs); i += size {
		out = append(out, string(rs[i:min(i+size, len(rs))]))
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

// Testdata reads a file from the module's testdata folder, such as
// "plans/newspaper.json".
func Testdata(t testing.TB, name string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("plannertest: cannot locate the module")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// NewspaperPlan is the seed's daily-newspaper plan as a model returns it:
// one create_board_with_cards action with 10 cards and 13 links.
func NewspaperPlan(t testing.TB) string { return Testdata(t, "plans/newspaper.json") }

// LastUserMessage returns the content of the request's last user message.
func LastUserMessage(req openai.ChatCompletionRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == openai.ChatMessageRoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}
