package planner

import (
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// realChunks are streamed chunks as model servers send them.
var realChunks = []string{
	// OpenAI: the role, a piece, the finish, the usage (include_usage).
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"{\"kind\": \"pro"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":321,"total_tokens":1321,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
	// Azure OpenAI: a first chunk with no choices but the content
	// filter's results, and pieces with escapes and characters past ASCII.
	`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`,
	`{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}},"delta":{"content":"é \u2028 🗞 \\n \"q\" \u00e9 \ud83d\uddde"},"finish_reason":null,"index":0}],"created":1700000000,"id":"x","model":"gpt-4o","object":"chat.completion.chunk"}`,
	// vLLM and llama.cpp: usage null until the last, timings beside it.
	`{"id":"cmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"content":"<think>"},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`,
	`{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1700000000,"id":"chatcmpl-2","model":"llama","object":"chat.completion.chunk","usage":{"completion_tokens":12,"prompt_tokens":34,"total_tokens":46},"timings":{"prompt_n":34,"predicted_ms":120.5}}`,
	// Ollama.
	`{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1700000000,"model":"llama3","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
	// Two choices (n=2): the first is read.
	`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
	// A null content beside a tool call.
	`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
}

// chunkText is the text of choice 0 and the total tokens a chunk gives,
// as go-openai reads them.
func chunkText(r openai.ChatCompletionStreamResponse) (text string, tokens int, usage bool) {
	for _, ch := range r.Choices {
		if ch.Index == 0 {
			text += ch.Delta.Content
		}
	}
	if r.Usage != nil {
		tokens, usage = r.Usage.TotalTokens, true
	}
	return text, tokens, usage
}

// sameAsGoOpenAI fails unless decodeChunk reads raw as go-openai's Recv
// does (encoding/json into its response type), when that reads it.
func sameAsGoOpenAI(t *testing.T, raw []byte) {
	t.Helper()
	var want openai.ChatCompletionStreamResponse
	if json.Unmarshal(raw, &want) != nil {
		return // go-openai refuses it; decodeChunk may read less
	}
	got, err := decodeChunk(raw)
	if err != nil {
		t.Fatalf("decodeChunk(%q): %v; go-openai read it", raw, err)
	}
	var text string
	for _, ch := range got.Choices {
		if ch.Index == 0 {
			text += ch.Delta.Content
		}
	}
	wantText, wantTokens, wantUsage := chunkText(want)
	if text != wantText {
		t.Errorf("decodeChunk(%q) text %q, go-openai %q", raw, text, wantText)
	}
	if (got.Usage != nil) != wantUsage || (got.Usage != nil && got.Usage.TotalTokens != wantTokens) {
		t.Errorf("decodeChunk(%q) usage %+v, go-openai %d (%v)", raw, got.Usage, wantTokens, wantUsage)
	}
}

func TestStreamChunkReadsWhatGoOpenAIReads(t *testing.T) {
	t.Parallel()
	for _, raw := range realChunks {
		var r openai.ChatCompletionStreamResponse
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatalf("go-openai does not read %s: %v", raw, err)
		}
		sameAsGoOpenAI(t, []byte(raw))
	}
	if _, err := decodeChunk([]byte(`{"choices":[{"index":0,"delta":{"content":"x"`)); err == nil {
		t.Error("a cut chunk decoded")
	}
}

func FuzzStreamChunk(f *testing.F) {
	for _, raw := range realChunks {
		f.Add([]byte(raw))
	}
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"bad \xff utf-8 \ud800 lone"}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) { sameAsGoOpenAI(t, raw) })
}

// BenchmarkStreamChunk decodes a 64-card plan's middle chunk as
// decodeChunk does; the baseline as go-openai's Recv does.
func BenchmarkStreamChunk(b *testing.B) {
	raw := []byte(realChunks[1])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeChunk(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamChunkBaseline(b *testing.B) {
	raw := []byte(realChunks[1])
	b.ReportAllocs()
	for b.Loop() {
		var r openai.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			b.Fatal(err)
		}
	}
}
