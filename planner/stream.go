package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	openai "github.com/sashabaranov/go-openai"
)

// StreamMode says whether the client asks the model server for streamed
// answers (BOBNET_MODEL_STREAM).
type StreamMode string

const (
	// StreamAuto asks for a stream, and asks plainly from then on once
	// the server refused or ignored a streamed request and answered the
	// same request plainly.
	StreamAuto StreamMode = "auto"
	// StreamOn always asks for a stream.
	StreamOn StreamMode = "on"
	// StreamOff never does.
	StreamOff StreamMode = "off"
)

// ParseStreamMode reads auto, on or off (in any case).
func ParseStreamMode(s string) (StreamMode, error) {
	switch m := StreamMode(strings.ToLower(strings.TrimSpace(s))); m {
	case StreamAuto, StreamOn, StreamOff:
		return m, nil
	}
	return "", fmt.Errorf("%q is not auto, on or off", s)
}

// Streams reports whether the client asks for streamed answers now.
func (c *Client) Streams() bool { return c.streaming() }

func (c *Client) streaming() bool {
	switch c.cfg.Stream {
	case StreamOn:
		return true
	case StreamAuto:
		return !c.noStream.Load()
	}
	return false
}

// textSink hears a streamed answer's text as it comes: start when an
// attempt begins (a retried request starts over), then each piece.
type textSink interface {
	start()
	text(piece string)
}

// errNotStreamed means the server answered a streamed request with
// something that is not a stream (a plain JSON answer), or closed it
// without one event: it does not stream.
var errNotStreamed = errors.New("the server did not answer with an event stream")

// refusedStream reports whether err says the server does not take
// streamed requests: no stream came back, or the request was refused as
// servers without streaming refuse it (an endpoint or method they do not
// have, or a 400/422 naming the stream parameter).
func refusedStream(err error) bool {
	if errors.Is(err, errNotStreamed) {
		return true
	}
	switch statusOf(err) {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return true
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return strings.Contains(strings.ToLower(err.Error()), "stream")
	}
	return false
}

// streamChunk is what the planner reads of one streamed chunk: its
// choices' text and, in the last, the usage.
type streamChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// recvChunk reads the stream's next chunk (decodeChunk).
func recvChunk(stream *openai.ChatCompletionStream) (streamChunk, error) {
	raw, err := stream.RecvRaw()
	if err != nil {
		return streamChunk{}, err
	}
	return decodeChunk(raw)
}

// decodeChunk decodes only what streamChunk reads, with go-json, where
// go-openai's Recv decodes its whole response type with encoding/json:
// that was a quarter of BobNet's CPU while a 64-card plan streamed (the
// preview benchmark's profile). BenchmarkStreamChunk has the two side by side;
// TestStreamChunkReadsWhatGoOpenAIReads and FuzzStreamChunk hold them to
// the same text and tokens. go-json keeps bytes that are not UTF-8 where
// encoding/json reads U+FFFD, so a chunk with such bytes is read with
// encoding/json.
func decodeChunk(raw []byte) (streamChunk, error) {
	var c streamChunk
	decode := gojson.Unmarshal
	if !utf8.Valid(raw) {
		decode = json.Unmarshal
	}
	if err := decode(raw, &c); err != nil {
		return streamChunk{}, fmt.Errorf("a streamed chunk: %w", err)
	}
	return c, nil
}

// sendStream asks for a streamed answer and joins its pieces, telling
// sink each one.
func (c *Client) sendStream(ctx context.Context, req openai.ChatCompletionRequest, sink textSink) (string, int, error) {
	req.Stream = true
	// OpenAI-compatible servers tell a stream's usage only when asked
	// (a last chunk with no choices); without it a streamed answer would
	// charge no tokens to the channel's budget.
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := c.api.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", 0, err
	}
	defer stream.Close()
	if ct := stream.Header().Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/event-stream") {
		return "", 0, fmt.Errorf("%w (Content-Type %s)", errNotStreamed, ct)
	}
	if sink != nil {
		sink.start()
	}
	var b strings.Builder
	tokens, events := 0, 0
	for {
		resp, err := recvChunk(stream)
		if errors.Is(err, io.EOF) {
			if events == 0 {
				return "", 0, errNotStreamed
			}
			return b.String(), tokens, nil
		}
		if err != nil {
			return "", 0, err
		}
		events++
		if resp.Usage != nil {
			tokens = resp.Usage.TotalTokens
		}
		for _, ch := range resp.Choices {
			if ch.Index == 0 && ch.Delta.Content != "" {
				b.WriteString(ch.Delta.Content)
				if sink != nil {
					sink.text(ch.Delta.Content)
				}
			}
		}
		if b.Len() > MaxRawOutput {
			// Past the cap the parser refuses it anyway: stop reading, and
			// keep what was read for the audit log.
			return b.String(), tokens, fmt.Errorf("%w: more than %d KiB streamed", ErrOutputTooLarge, MaxRawOutput>>10)
		}
	}
}
