package app

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// NewLogger is the one logger BobNet passes down: text or JSON at the
// configured level. Every message and string value it writes has URL
// passwords masked and the configured secrets removed, so a connection
// string or token that reaches a log line by way of an error still does
// not reach the log.
func NewLogger(w io.Writer, cfg Config) *slog.Logger {
	scrub := cfg.Scrubber()
	opts := &slog.HandlerOptions{
		Level: cfg.LogLevel,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch v := a.Value.Resolve(); v.Kind() {
			case slog.KindString:
				return slog.String(a.Key, scrub(v.String()))
			case slog.KindAny:
				if err, ok := v.Any().(error); ok {
					return slog.String(a.Key, scrub(err.Error()))
				}
				if s, ok := v.Any().(interface{ String() string }); ok {
					return slog.String(a.Key, scrub(s.String()))
				}
			}
			return a
		},
	}
	var h slog.Handler
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(scrubHandler{Handler: h, scrub: scrub})
}

// Scrubber returns a function that masks URL passwords and removes the
// configured secrets from a text.
func (c *Config) Scrubber() func(string) string {
	secrets := c.secrets()
	return func(s string) string {
		s = redactURLs(s)
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, masked)
		}
		return s
	}
}

// scrubHandler cleans the message of each record; ReplaceAttr cleans the
// attributes.
type scrubHandler struct {
	slog.Handler
	scrub func(string) string
}

func (h scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Message = h.scrub(r.Message)
	return h.Handler.Handle(ctx, r)
}

func (h scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return scrubHandler{Handler: h.Handler.WithAttrs(attrs), scrub: h.scrub}
}

func (h scrubHandler) WithGroup(name string) slog.Handler {
	return scrubHandler{Handler: h.Handler.WithGroup(name), scrub: h.scrub}
}

// secrets are the configured secret values, longest first so that one
// secret containing another is removed whole. Very short values are left
// out: masking every "a" in the log would hide more than it protects.
func (c *Config) secrets() []string {
	var out []string
	for _, s := range c.secretValues {
		if len(s) >= 6 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
