// Package planner asks a planning model and makes sense of its answer: the
// prompt builder, the tolerant parser of model output, the one repair call,
// the OpenAI-compatible client and the assignee profiles. What a plan is and
// how it is validated lives in package plan. It does no I/O besides the LLM
// and reading profiles.
package planner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bobnet/bobnet/plan"
	openai "github.com/sashabaranov/go-openai"
)

// ClientConfig says which OpenAI-compatible server to ask and how.
type ClientConfig struct {
	BaseURL string // e.g. http://127.0.0.1:11434/v1 for Ollama
	APIKey  string
	Model   string
	// Timeout bounds one whole planning call, retries and repair included.
	// Zero means two minutes.
	Timeout time.Duration
	// MaxRetries bounds the retries of one request after 429, 5xx or a
	// connection error. Zero means 3; negative means none.
	MaxRetries int
	// Backoff is the first retry's delay; it doubles each time, with
	// jitter, up to 10 s. Zero means 500 ms.
	Backoff time.Duration
	// Stream says whether to ask for streamed answers (stream.go): a
	// streamed plan can be shown card by card while the model writes it.
	// "" is StreamOff.
	Stream      StreamMode
	Temperature float32
	HTTPClient  *http.Client
}

// Client plans with an OpenAI-compatible chat-completions server (OpenAI,
// Ollama, vLLM, llama.cpp).
type Client struct {
	cfg    ClientConfig
	api    *openai.Client
	logger *slog.Logger
	// noJSONMode is set once the server has refused response_format, so
	// later calls do not pay for the refusal again.
	noJSONMode atomic.Bool
	// noStream is set once a server asked in StreamAuto refused or
	// ignored a streamed request and answered a plain one.
	noStream atomic.Bool
}

// NewClient returns a client for cfg.
func NewClient(cfg ClientConfig, logger *slog.Logger) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		// One host, called by every worker at once: keep that many
		// connections idle rather than net/http's default of two.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = modelConns
		next = tr
	}
	hc.Transport = capBody{next: next}
	oc.HTTPClient = &hc
	return &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), logger: logger}
}

// modelConns is how many idle connections to the model server are kept:
// more than the workers a replica usually runs.
const modelConns = 64

// Plan asks the model for a plan, parses and validates its output, and makes
// one repair call when the output does not parse or validate. Errors match
// ErrUnreachable, ErrTimeout or ErrInvalidOutput (an *InvalidOutputError
// carrying the raw outputs).
func (c *Client) Plan(ctx context.Context, in PromptInput, opts plan.Options) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	msgs := BuildPrompt(in)
	raw, tokens, err := c.complete(ctx, msgs, true, draftSinkFor(in.OnDraft))
	if errors.Is(err, ErrOutputTooLarge) {
		return tooLarge(raw, tokens, err)
	}
	if err != nil {
		return Outcome{}, err
	}
	res := Check([]byte(raw), opts)
	if res.Valid {
		return Outcome{Result: res, Raw: raw, Tokens: tokens}, nil
	}
	c.logger.Info("model output invalid; asking for a repair", "errors", len(res.Errors), "first", res.Errors[0].Message)
	raw2, tokens2, err := c.complete(ctx, RepairMessages(msgs, raw, res.Errors), true, nil)
	if errors.Is(err, ErrOutputTooLarge) {
		out, err := tooLarge(raw2, tokens2, err)
		out.Tokens += tokens
		return out, err
	}
	if err != nil {
		return Outcome{Tokens: tokens}, err
	}
	res2 := Check([]byte(raw2), opts)
	if res2.Valid {
		return Outcome{Result: res2, Raw: raw2, Repaired: true, Tokens: tokens + tokens2}, nil
	}
	return Outcome{Result: res2, Raw: raw2, Tokens: tokens + tokens2}, &InvalidOutputError{Raw: []string{raw, raw2}, Errors: res2.Errors}
}

// tooLarge is the outcome of a call whose answer was cut off at the cap:
// an invalid output, not asked to be repaired (a model that ran on that
// long would likely do it again), with what was read of it.
func tooLarge(raw string, tokens int, err error) (Outcome, error) {
	return Outcome{Raw: raw, Tokens: tokens}, &InvalidOutputError{
		Raw: []string{raw}, Errors: []plan.Issue{{Message: err.Error()}}, Cause: ErrOutputTooLarge,
	}
}

// EstimateTokens is the token count of text when the server does not say:
// about four characters a token.
func EstimateTokens(text string) int { return (len(text) + 3) / 4 }

// Ping asks the server for its models, to tell whether it is reachable.
func (c *Client) Ping(ctx context.Context) error {
	if _, err := c.api.ListModels(ctx); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, c.cfg.BaseURL, err)
	}
	return nil
}

// Write asks the model for free text (a card's output in a run, in
// Markdown), not a plan: no JSON mode, the same retries and timeout as
// planning. It returns the answer and the tokens it cost.
func (c *Client) Write(ctx context.Context, msgs []Message) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	return c.complete(ctx, msgs, false, nil)
}

// complete sends one chat request, retrying what is worth retrying, and
// returns the answer and the tokens it cost: the server's usage, or an
// estimate from the prompt and answer when the server sends none. sink,
// when not nil, hears a streamed answer as it comes.
func (c *Client) complete(ctx context.Context, msgs []Message, wantJSON bool, sink textSink) (string, int, error) {
	out, tokens, err := c.completeOnce(ctx, msgs, wantJSON, sink)
	if (err == nil || errors.Is(err, ErrOutputTooLarge)) && tokens <= 0 {
		n := 0
		for _, m := range msgs {
			n += len(m.Content)
		}
		answer := EstimateTokens(out)
		if err != nil && out == "" {
			answer = MaxResponseBody / 4 // cut off unseen: at least the cap
		}
		tokens = answer + (n+3)/4
	}
	return out, tokens, err
}

func (c *Client) completeOnce(ctx context.Context, msgs []Message, wantJSON bool, sink textSink) (string, int, error) {
	req := openai.ChatCompletionRequest{
		Model:       c.cfg.Model,
		Temperature: c.cfg.Temperature,
	}
	for _, m := range msgs {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		jsonMode := wantJSON && !c.noJSONMode.Load()
		req.ResponseFormat = nil
		if jsonMode {
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		}
		out, tokens, err := c.send(ctx, req, sink)
		if err == nil {
			return out, tokens, nil
		}
		if errors.Is(err, ErrOutputTooLarge) {
			return out, tokens, err // asking again would read as much again
		}
		if ctx.Err() != nil {
			return "", 0, fmt.Errorf("%w after %s: %w", ErrTimeout, c.cfg.Timeout, err)
		}
		status := statusOf(err)
		switch {
		case jsonMode && status == http.StatusBadRequest && mentionsJSONMode(err):
			// Servers without JSON mode refuse the field; ask plainly.
			c.logger.Info("model server refuses response_format; asking without it", "base_url", c.cfg.BaseURL)
			c.noJSONMode.Store(true)
			attempt--
			continue
		case status == http.StatusTooManyRequests || status >= 500 || (status == 0 && isNetworkError(err)):
			lastErr = err
		default:
			return "", 0, fmt.Errorf("%w: %s refused the request: %w", ErrUnreachable, c.cfg.BaseURL, err)
		}
		if c.cfg.MaxRetries < 0 || attempt >= c.cfg.MaxRetries {
			return "", 0, fmt.Errorf("%w: %s (after %d attempts): %w", ErrUnreachable, c.cfg.BaseURL, attempt+1, lastErr)
		}
		delay := c.backoff(attempt)
		c.logger.Info("model server failed; retrying", "attempt", attempt+1, "delay", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return "", 0, fmt.Errorf("%w after %s: %w", ErrTimeout, c.cfg.Timeout, lastErr)
		}
	}
}

func (c *Client) send(ctx context.Context, req openai.ChatCompletionRequest, sink textSink) (string, int, error) {
	if !c.streaming() {
		return c.sendPlain(ctx, req)
	}
	out, tokens, err := c.sendStream(ctx, req, sink)
	if c.cfg.Stream != StreamAuto || !refusedStream(err) {
		return out, tokens, err
	}
	// The server will not stream: ask plainly, and once that works keep
	// asking plainly for the rest of the process.
	c.logger.Info("model server does not answer streamed requests; asking without streaming", "base_url", c.cfg.BaseURL, "err", err)
	out, tokens, err = c.sendPlain(ctx, req)
	if err == nil {
		c.noStream.Store(true)
	}
	return out, tokens, err
}

func (c *Client) sendPlain(ctx context.Context, req openai.ChatCompletionRequest) (string, int, error) {
	resp, err := c.api.CreateChatCompletion(ctx, req)
	if errors.Is(err, ErrOutputTooLarge) {
		return "", 0, fmt.Errorf("%w: an answer of more than %d KiB", ErrOutputTooLarge, MaxResponseBody>>10)
	}
	if err != nil {
		return "", 0, err
	}
	if len(resp.Choices) == 0 {
		return "", 0, errors.New("the answer has no choices")
	}
	return resp.Choices[0].Message.Content, resp.Usage.TotalTokens, nil
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.Backoff << attempt
	if d > 10*time.Second || d <= 0 {
		d = 10 * time.Second
	}
	// Full jitter in [d/2, d): retries from many workers spread out.
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func statusOf(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}

func mentionsJSONMode(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "response_format") || strings.Contains(msg, "json_object") || strings.Contains(msg, "json mode")
}

func isNetworkError(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// MaxResponseBody is the most of a (not streamed) answer's body the client
// reads. An answer's text past MaxRawOutput is refused by the parser
// anyway; the body may be larger than its text (JSON escapes, usage), but
// not by this much.
const MaxResponseBody = 1 << 20

// capBody stops reading an answer's body past MaxResponseBody, so a model
// server that sends megabytes costs the client no more than the cap. A
// stream's body is not capped here (its events carry much framing):
// send stops reading it once its text passes MaxRawOutput.
type capBody struct{ next http.RoundTripper }

func (c capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxResponseBody}
	return resp, nil
}

// cappedBody reads up to left bytes, then fails with ErrOutputTooLarge.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrOutputTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		b.left = -1
		return 0, ErrOutputTooLarge
	}
	b.left -= int64(n)
	return n, err
}
