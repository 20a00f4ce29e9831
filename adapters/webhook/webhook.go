package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/signing"
)

// MaxBody caps a delivery's body; GitHub's own cap is 25 MB, but no event
// worth planning from is near 1 MiB.
const MaxBody = 1 << 20

// ReadingSlots bounds how many delivery bodies are read at once, before
// their signatures are known (at most ReadingSlots MiB); past it a
// delivery is refused at once with 503 and Retry-After, as /slack/* does.
const ReadingSlots = 64

// Engine is what the adapter needs from the bot engine.
type Engine interface {
	SubmitOnce(ctx context.Context, r board.Request) (board.RequestID, bool, error)
}

// Adapter serves the hooks.
type Adapter struct {
	hooks    map[string]*Hook
	eng      Engine
	logger   *slog.Logger
	builtins map[string]*template.Template
	// reading holds a slot per body being read (see ReadingSlots).
	reading chan struct{}
}

// Deciders are who decides in each hook's channel beside the requester
// and the admins, by channel key: the engine's bot.Config.ChannelDeciders.
func Deciders(hooks map[string]*Hook) map[string][]string {
	out := map[string][]string{}
	for _, h := range hooks {
		if len(h.Deciders) > 0 {
			out[h.Channel.Key()] = slices.Clone(h.Deciders)
		}
	}
	return out
}

// New returns an adapter serving hooks, submitting to eng. Who decides in
// each hook's channel is the engine's config (Deciders).
func New(hooks map[string]*Hook, eng Engine, logger *slog.Logger) *Adapter {
	b := make(map[string]*template.Template, len(builtins))
	for name := range builtins {
		// The built-in templates are tested to parse.
		b[name] = template.Must(parseTemplate(name, name))
	}
	return &Adapter{hooks: hooks, eng: eng, logger: logger, builtins: b, reading: make(chan struct{}, ReadingSlots)}
}

// Routes mounts POST /api/v1/hooks/{name}. The hooks are signed by their
// senders, so they sit outside the API token check.
func (a *Adapter) Routes(r chi.Router) {
	r.Post("/api/v1/hooks/{name}", a.ServeHTTP)
}

// ServeHTTP takes one delivery. Everything that can be refused from the
// headers (an unknown hook, missing or ill-formed signature headers, a
// stale timestamp, a declared size over MaxBody) is refused before the
// body is read, and at most ReadingSlots bodies are read at once; a
// refused delivery records nothing and reaches neither Redis nor the model.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	hook, ok := a.hooks[name]
	if !ok {
		httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("no hook named %q: add name=secret to BOBNET_HOOK_SECRETS", name))
		return
	}
	now := time.Now()
	scheme, err := signing.CheckHeaders(r.Header, now)
	if err != nil {
		httpjson.Error(w, http.StatusUnauthorized, err.Error())
		return
	}
	if err := signing.CheckLength(r, MaxBody); err != nil {
		httpjson.Error(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	// Until its signature is checked a body is anyone's: only so many are
	// read at once, and past that a sender is told to come back, rather
	// than slow senders holding memory and goroutines without bound.
	select {
	case a.reading <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		httpjson.Error(w, http.StatusServiceUnavailable, "too many deliveries being read; deliver it again shortly")
		return
	}
	body, err := signing.ReadBody(w, r, MaxBody)
	<-a.reading
	if errors.Is(err, signing.ErrTooLarge) {
		httpjson.Error(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "could not read the body: "+err.Error())
		return
	}
	if err := signing.Verify(scheme, r.Header, hook.Secret, body, now); err != nil {
		httpjson.Error(w, http.StatusUnauthorized, err.Error())
		return
	}
	ev := Event{Hook: hook.Name, Event: eventType(r.Header)}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // issue numbers render as 42, not 4.2e+01
	if err := dec.Decode(&ev.Payload); err != nil || ev.Payload == nil {
		msg := "the body must be one JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		httpjson.Error(w, http.StatusBadRequest, msg)
		return
	}
	if dec.More() {
		httpjson.Error(w, http.StatusBadRequest, "the body must be one JSON object, not several")
		return
	}
	if ev.Event == "" {
		ev.Event = fieldString(ev.Payload, "type")
	}
	if ev.Event == "ping" || !hook.Filter.Match(ev) {
		httpjson.Write(w, http.StatusAccepted, map[string]string{"status": "ignored"})
		return
	}
	text, err := a.requestText(hook, ev)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	// The audit log then says which delivery a request came from, by the
	// sender's own id; what is new is decided by the signed dedupeID.
	delivery := dedupeID(scheme, r.Header, body)
	named := deliveryID(r.Header)
	if named == "" {
		named = delivery
	}
	ctx := bot.WithVia(r.Context(), "hook:"+hook.Name+" "+named)
	id, dup, err := a.submit(ctx, hook, delivery, board.Request{
		Thread: board.Thread{Channel: hook.Channel, ID: threadID(hook.Channel, delivery)},
		User:   "hook:" + hook.Name, UserName: sender(ev.Payload, hook.Name),
		Text: text, ReceivedAt: now,
	})
	switch {
	case errors.Is(err, bot.ErrRateLimited):
		w.Header().Set("Retry-After", "60")
		httpjson.Error(w, http.StatusTooManyRequests, err.Error())
		return
	case err != nil:
		a.logger.Warn("webhook not queued", "hook", hook.Name, "delivery", named, "err", err)
		w.Header().Set("Retry-After", "5")
		httpjson.Error(w, http.StatusServiceUnavailable, "BobNet could not queue the request; deliver it again shortly")
		return
	}
	writeAccepted(w, id, dup)
}

// requestText is the request a delivery makes: the hook's template, or
// the built-in one for its event, rendered and quoted (see RequestText).
func (a *Adapter) requestText(hook *Hook, ev Event) (string, error) {
	t := hook.Template
	if t == nil {
		t = a.builtins[defaultTemplate(ev.Event)]
	}
	if t == a.builtins["generic"] {
		if text, ok := genericText(ev); ok {
			return quote(ev, text), nil
		}
	}
	return RequestText(t, ev)
}

// writeAccepted answers a delivery taken in, or recognised as a
// redelivery of one: {"request_id":"…"}, with "duplicate":true for a
// redelivery. Written out rather than through encoding/json, whose
// encoder cost more than the rest of the answer on the ack path. Request
// ids are letters, digits and "_" (bot.NewRequestID), which need no
// escaping in JSON; any other id goes through encoding/json.
func writeAccepted(w http.ResponseWriter, id board.RequestID, dup bool) {
	if !plainID(string(id)) {
		httpjson.Write(w, http.StatusAccepted, accepted{RequestID: id, Duplicate: dup})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	var scratch [96]byte
	b := append(scratch[:0], `{"request_id":"`...)
	b = append(b, id...)
	b = append(b, '"')
	if dup {
		b = append(b, `,"duplicate":true`...)
	}
	_, _ = w.Write(append(b, '}', '\n'))
}

// accepted is writeAccepted's answer as encoding/json writes it.
type accepted struct {
	RequestID board.RequestID `json:"request_id"`
	Duplicate bool            `json:"duplicate,omitempty"`
}

// plainID says whether id is made of ASCII letters, digits, "_" and "-"
// only, and short enough for writeAccepted's buffer.
func plainID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// submit queues the request once per delivery (its dedupeID). The
// engine's intake dedupes on the ack path in the same Redis step that
// queues, so of
// concurrent copies one is queued and the rest answer its request id, and
// a copy that failed to queue left nothing behind for the retry to trip
// on. Postgres is not on this path: the worker records the delivery in
// webhook_deliveries when it takes the request.
func (a *Adapter) submit(ctx context.Context, hook *Hook, delivery string, req board.Request) (board.RequestID, bool, error) {
	if delivery != "" {
		req.DedupeKey = "hook:" + hook.Name + ":" + delivery
		req.Webhook = &board.HookOrigin{Hook: hook.Name, ID: delivery}
	}
	return a.eng.SubmitOnce(ctx, req)
}

// eventType is the event's name from the sender's header.
func eventType(h http.Header) string {
	for _, k := range []string{"X-GitHub-Event", "X-Gitlab-Event", "X-Bobnet-Event"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// maxDedupeID is the longest webhook-id kept as it is; a longer one is
// kept as its digest, so ids that differ only past a cut stay apart.
const maxDedupeID = 200

// dedupeID tells a delivery from a replay of it, from signed content only:
// Standard Webhooks' webhook-id, which its signature covers, or else the
// SHA-256 of the body, all that the sha256= schemes sign. The delivery
// headers (X-Bobnet-Delivery, X-GitHub-Delivery, X-Gitlab-Event-UUID) are
// unsigned: whoever replays a captured delivery can change them, so they
// only name the delivery in the audit log. With the body digest two
// deliveries of the same body are one delivery, for good: senders that
// mean to send a body twice put something unique in it.
func dedupeID(scheme signing.Scheme, h http.Header, body []byte) string {
	if scheme == signing.SchemeStandard {
		if id := strings.TrimSpace(h.Get("webhook-id")); id != "" {
			if len(id) <= maxDedupeID {
				return id
			}
			sum := sha256.Sum256([]byte(id))
			return "webhook-id-sha256:" + hex.EncodeToString(sum[:])
		}
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// deliveryID is the sender's name for this delivery, from its headers,
// for the audit log; being unsigned, it decides nothing.
func deliveryID(h http.Header) string {
	for _, k := range []string{"X-Bobnet-Delivery", "X-GitHub-Delivery", "webhook-id", "X-Gitlab-Event-UUID"} {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			return truncate(v, 200)
		}
	}
	return ""
}

// threadID is the thread a hook's request opens. Slack and Matrix need
// their own ids (a ts, an event id), so there the request starts a new
// message; a console thread is named after the delivery (its dedupeID).
func threadID(ch board.Channel, delivery string) string {
	if ch.Source != board.SourceConsole {
		return ""
	}
	return delivery
}

// sender is who caused the event, for showing: a GitHub login, a GitLab
// user name, a "user" field, or the hook.
func sender(p map[string]any, hook string) string {
	for _, path := range []string{"sender.login", "user.username", "user"} {
		if s := fieldString(p, path); s != "" {
			return truncate(s, 64) + " via " + hook
		}
	}
	return hook
}
