package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Engine is what the Slack adapter needs from the bot engine.
type Engine interface {
	Submit(ctx context.Context, r bot.Request) (bot.RequestID, error)
	Approve(ctx context.Context, id bot.ProposalID, user string) (bot.Approval, error)
	Cancel(ctx context.Context, id bot.ProposalID, user string) (bot.Proposal, error)
	Revise(ctx context.Context, id bot.ProposalID, user, feedback string) (bot.RequestID, error)
	ProposeAgain(ctx context.Context, id bot.ProposalID, user string) (bot.RequestID, error)
	Authorize(ctx context.Context, id bot.ProposalID, user string) (bot.Proposal, error)
	ChannelStatus(ctx context.Context, ch bot.Channel) (board.Status, error)
	BoardStatus(ctx context.Context, id board.ID) (board.Status, error)
	MoveCard(ctx context.Context, ch bot.Channel, user, ref, status string) (board.CardUpdate, error)
	AssignCard(ctx context.Context, ch bot.Channel, user, ref, profile string) (board.CardUpdate, error)
	NextCards(ctx context.Context, ch bot.Channel) (board.Status, error)
}

// Memory remembers event ids and the threads the bot speaks in, across
// replicas and restarts; *pending.Store is one.
type Memory interface {
	SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Mark(ctx context.Context, key string, ttl time.Duration) error
	Marked(ctx context.Context, key string) (bool, error)
}

// Config is the Slack app's settings.
type Config struct {
	BotToken      string
	SigningSecret string
	AppToken      string // Socket Mode
	APIURL        string // Slack's Web API base, overridden in tests
	PublicURL     string
	Now           func() time.Time
}

// Adapter is BobNet in Slack; it is also the engine's poster for Slack
// channels.
type Adapter struct {
	cfg    Config
	api    *slackapi.Client
	eng    Engine
	memory Memory
	verify Verifier
	logger *slog.Logger
	// work bounds the goroutines that finish decisions after the ack.
	work context.Context
}

// New returns a Slack adapter. work is the server's lifetime: decisions
// started after an ack finish within it.
func New(work context.Context, cfg Config, eng Engine, memory Memory, logger *slog.Logger) (*Adapter, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("SLACK_BOT_TOKEN is required")
	}
	opts := []slackapi.Option{}
	if cfg.APIURL != "" {
		opts = append(opts, slackapi.OptionAPIURL(strings.TrimRight(cfg.APIURL, "/")+"/"))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	return &Adapter{
		cfg: cfg, api: slackapi.New(cfg.BotToken, opts...), eng: eng, memory: memory,
		verify: Verifier{Secret: cfg.SigningSecret, Now: cfg.Now}, logger: logger, work: work,
	}, nil
}

// maxBody caps what Slack may send us; its payloads are far smaller.
const maxBody = 1 << 20

// Routes mounts the three signed endpoints.
func (a *Adapter) Routes(r chi.Router) {
	r.Post("/slack/events", a.signed(a.events))
	r.Post("/slack/interactivity", a.signed(a.interactivity))
	r.Post("/slack/commands", a.signed(a.commands))
}

// signed reads the body (capped), checks Slack's signature and hands the
// raw body on. A bad or stale signature is a 401 and nothing else.
func (a *Adapter) signed(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := a.verify.Verify(r.Header, body); err != nil {
			a.logger.Warn("slack request refused", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}

// eventEnvelope is the Events API's outer object.
type eventEnvelope struct {
	Type      string     `json:"type"`
	Challenge string     `json:"challenge"`
	TeamID    string     `json:"team_id"`
	EventID   string     `json:"event_id"`
	Event     innerEvent `json:"event"`
}

type innerEvent struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype"`
	User     string `json:"user"`
	BotID    string `json:"bot_id"`
	Text     string `json:"text"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts"`
	Channel  string `json:"channel"`
}

func (a *Adapter) events(w http.ResponseWriter, r *http.Request, body []byte) {
	var env eventEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		http.Error(w, "invalid event JSON", http.StatusBadRequest)
		return
	}
	if env.Type == "url_verification" {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, env.Challenge)
		return
	}
	// Ack first in spirit: the handling below only enqueues.
	if err := a.handleEvent(r.Context(), env); err != nil {
		a.logger.Warn("slack event", "event_id", env.EventID, "err", err)
		if errors.Is(err, bot.ErrUnavailable) {
			// Let Slack retry later; the dedupe keeps it to one request.
			http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// mention matches the bot's (or anyone's) mention markup.
var mention = regexp.MustCompile(`<@[A-Z0-9]+(\|[^>]*)?>`)

// handleEvent turns one event into a request. Shared by HTTP and Socket
// Mode, so both dedupe the same way: by event id, whatever the transport
// says about retries.
func (a *Adapter) handleEvent(ctx context.Context, env eventEnvelope) error {
	if env.Type != "event_callback" {
		return nil
	}
	ev := env.Event
	if ev.BotID != "" || ev.User == "" || (ev.Subtype != "" && ev.Subtype != "thread_broadcast") {
		return nil // bots, edits, joins: not requests
	}
	switch ev.Type {
	case "app_mention":
	case "message":
		// A plain message counts only inside a thread the bot speaks in;
		// a mention there also arrives as app_mention, so skip those.
		if ev.ThreadTS == "" || mention.MatchString(ev.Text) {
			return nil
		}
		in, err := a.memory.Marked(ctx, threadKey(ev.Channel, ev.ThreadTS))
		if err != nil || !in {
			return err
		}
	default:
		return nil
	}
	if env.EventID != "" {
		first, err := a.memory.SeenOnce(ctx, "slack-event:"+env.EventID, 24*time.Hour)
		if err != nil {
			return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
		}
		if !first {
			return nil // a retry or a redelivery
		}
	}
	thread := ev.ThreadTS
	if thread == "" {
		thread = ev.TS
	}
	t := bot.Thread{Channel: bot.Channel{Source: bot.SourceSlack, ID: ev.Channel}, ID: thread}
	text := strings.TrimSpace(mention.ReplaceAllString(ev.Text, ""))
	if text == "" || strings.EqualFold(text, "help") {
		return a.Reply(ctx, t, bot.Reply{Kind: bot.ReplyInfo, Text: helpText})
	}
	_, err := a.eng.Submit(ctx, bot.Request{Thread: t, User: ev.User, Text: text, DedupeKey: "slack:" + env.EventID})
	if errors.Is(err, bot.ErrRateLimited) {
		return nil // the engine already said "slow down" in the thread
	}
	return err
}

// threadKey names a thread the bot has posted in.
func threadKey(channel, ts string) string { return "slack-thread:" + channel + ":" + ts }

// rememberThread notes a thread the bot posted in, so plain replies there
// are requests too.
func (a *Adapter) rememberThread(ctx context.Context, t bot.Thread) {
	if err := a.memory.Mark(ctx, threadKey(t.Channel.ID, t.ID), 30*24*time.Hour); err != nil {
		a.logger.Warn("remember slack thread", "err", err)
	}
}

// Reply posts text in the thread, never broadcast to the channel.
func (a *Adapter) Reply(ctx context.Context, t bot.Thread, r bot.Reply) error {
	text := escape(r.Text)
	for _, q := range r.Questions {
		text += "\n• " + escape(q)
	}
	if r.BoardURL != "" {
		text += "\n<" + r.BoardURL + "|Open the board>"
	}
	if r.Kind == bot.ReplyError || r.Kind == bot.ReplySlowDown {
		text = ":warning: " + text
	}
	_, _, err := a.api.PostMessageContext(ctx, t.Channel.ID,
		slackapi.MsgOptionText(fallback(r.Text), false),
		slackapi.MsgOptionBlocks(slackapi.NewSectionBlock(mrkdwn(text), nil, nil)),
		slackapi.MsgOptionTS(t.ID))
	if err == nil {
		a.rememberThread(ctx, t)
	}
	return err
}

// PostPreview posts a pending proposal's preview in its thread.
func (a *Adapter) PostPreview(ctx context.Context, p bot.Proposal) (bot.MessageRef, error) {
	_, ts, err := a.api.PostMessageContext(ctx, p.Thread.Channel.ID,
		slackapi.MsgOptionText(fallback("Proposed plan: "+p.Plan.Answer), false),
		slackapi.MsgOptionBlocks(PreviewBlocks(p, a.cfg.PublicURL)...),
		slackapi.MsgOptionTS(p.Thread.ID))
	if err != nil {
		return "", fmt.Errorf("post preview: %w", err)
	}
	a.rememberThread(ctx, p.Thread)
	return bot.MessageRef(ts), nil
}

// UpdatePreview redraws a decided preview in place (chat.update).
func (a *Adapter) UpdatePreview(ctx context.Context, p bot.Proposal) error {
	if p.Message == "" {
		return nil
	}
	_, _, _, err := a.api.UpdateMessageContext(ctx, p.Thread.Channel.ID, string(p.Message),
		slackapi.MsgOptionText(fallback("Proposal "+string(p.State)), false),
		slackapi.MsgOptionBlocks(DecidedBlocks(p)...))
	if err != nil {
		return fmt.Errorf("update preview: %w", err)
	}
	return nil
}

// ephemeral tells one user something only they see.
func (a *Adapter) ephemeral(ctx context.Context, channel, thread, user, text string) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	if _, err := a.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		a.logger.Warn("post ephemeral", "err", err)
	}
}

// decisionText is what a refused click tells the clicker.
func decisionText(err error) string {
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de) && de.By != "":
		return fmt.Sprintf("This proposal was already %s by <@%s>.", de.State, escape(de.By))
	case errors.As(err, &de):
		return fmt.Sprintf("This proposal was already %s.", de.State)
	case errors.Is(err, bot.ErrForbidden):
		return "Only the person who asked for this plan, or an admin, can decide it."
	case errors.Is(err, bot.ErrExpired):
		return "This proposal expired. Use “Propose again” to get a fresh one."
	case errors.Is(err, bot.ErrNotFound):
		return "I can't find that proposal any more."
	case errors.Is(err, bot.ErrUnavailable):
		return "BobNet's database is unavailable right now; nothing was changed. Try again in a minute."
	}
	return "That did not work: " + escape(err.Error())
}

func (a *Adapter) interactivity(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		http.Error(w, "missing payload", http.StatusBadRequest)
		return
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "invalid payload", http.StatusBadRequest)
		return
	}
	switch cb.Type {
	case slackapi.InteractionTypeBlockActions:
		a.blockActions(r.Context(), cb)
		w.WriteHeader(http.StatusOK)
	case slackapi.InteractionTypeViewSubmission:
		a.viewSubmission(w, r.Context(), cb)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// blockActions handles button clicks. The button's value is only a
// proposal id: who may do what is checked again by the engine, and a
// second click finds the proposal decided and is told so.
func (a *Adapter) blockActions(ctx context.Context, cb slackapi.InteractionCallback) {
	user, channel := cb.User.ID, cb.Channel.ID
	thread := cb.Message.ThreadTimestamp
	if thread == "" {
		thread = cb.Container.ThreadTs
	}
	for _, act := range cb.ActionCallback.BlockActions {
		id := bot.ProposalID(act.Value)
		switch act.ActionID {
		case actionRevise:
			// The trigger id lives 3 s: check and open the modal now.
			p, err := a.eng.Authorize(ctx, id, user)
			if err != nil {
				a.ephemeral(ctx, channel, thread, user, decisionText(err))
				continue
			}
			if _, err := a.api.OpenViewContext(ctx, cb.TriggerID, reviseModal(p)); err != nil {
				a.logger.Warn("open revise modal", "err", err)
			}
		case actionApprove, actionCancel, actionProposeAgain:
			// A decision writes Postgres; finish it after the ack, bounded
			// by the server's lifetime rather than this request's.
			go a.decide(context.WithoutCancel(a.work), act.ActionID, id, user, channel, thread)
		}
	}
}

func (a *Adapter) decide(ctx context.Context, action string, id bot.ProposalID, user, channel, thread string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	switch action {
	case actionApprove:
		_, err = a.eng.Approve(ctx, id, user)
	case actionCancel:
		_, err = a.eng.Cancel(ctx, id, user)
	case actionProposeAgain:
		_, err = a.eng.ProposeAgain(ctx, id, user)
	}
	if err != nil {
		a.ephemeral(ctx, channel, thread, user, decisionText(err))
	}
}

// reviseMeta is what the modal carries back.
type reviseMeta struct {
	Proposal bot.ProposalID `json:"p"`
	Channel  string         `json:"c"`
	Thread   string         `json:"t"`
}

func reviseModal(p bot.Proposal) slackapi.ModalViewRequest {
	meta, _ := json.Marshal(reviseMeta{Proposal: p.ID, Channel: p.Thread.Channel.ID, Thread: p.Thread.ID})
	input := slackapi.NewPlainTextInputBlockElement(plainText("e.g. add a card for an RSS feed; give the design QA to a Coder", 150), feedbackInput)
	input.Multiline = true
	return slackapi.ModalViewRequest{
		Type:            slackapi.VTModal,
		Title:           plainText("Revise the plan", 24),
		Submit:          plainText("Re-plan", 24),
		Close:           plainText("Cancel", 24),
		CallbackID:      reviseCallback,
		PrivateMetadata: string(meta),
		Blocks: slackapi.Blocks{BlockSet: []slackapi.Block{
			slackapi.NewSectionBlock(mrkdwn(fmt.Sprintf("What should change in *%s* (v%d)?", escape(boardName(p)), p.Version)), nil, nil),
			slackapi.NewInputBlock(feedbackBlock, plainText("Feedback", 50), nil, input),
		}},
	}
}

func boardName(p bot.Proposal) string {
	if b := p.Plan.NewBoard(); b != nil {
		return b.Name
	}
	return "the plan"
}

func (a *Adapter) viewSubmission(w http.ResponseWriter, ctx context.Context, cb slackapi.InteractionCallback) {
	if resp := a.submitView(ctx, cb); resp != nil {
		writeJSON(w, resp)
		return
	}
	w.WriteHeader(http.StatusOK) // closes the modal; the new preview follows in the thread
}

// submitView handles the Revise modal's submission and returns Slack's
// response_action, or nil to close the modal. Shared by HTTP and Socket
// Mode (where the answer travels in the ack).
func (a *Adapter) submitView(ctx context.Context, cb slackapi.InteractionCallback) map[string]any {
	if cb.View.CallbackID != reviseCallback {
		return nil
	}
	var meta reviseMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	feedback := strings.TrimSpace(cb.View.State.Values[feedbackBlock][feedbackInput].Value)
	if feedback == "" {
		return map[string]any{"response_action": "errors", "errors": map[string]string{feedbackBlock: "Say what should change."}}
	}
	if _, err := a.eng.Revise(ctx, meta.Proposal, cb.User.ID, feedback); err != nil {
		return map[string]any{"response_action": "errors", "errors": map[string]string{feedbackBlock: decisionText(err)}}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// commandReply is a slash command's answer.
type commandReply struct {
	ResponseType string           `json:"response_type"`
	Text         string           `json:"text"`
	Blocks       []slackapi.Block `json:"blocks,omitempty"`
}

var boardIDPattern = regexp.MustCompile(`^b_[a-z2-7]{26}$`)

func (a *Adapter) commands(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	writeJSON(w, a.command(r.Context(), form.Get("channel_id"), form.Get("user_id"), form.Get("text")))
}

// command answers /bobnet; shared by HTTP and Socket Mode.
func (a *Adapter) command(ctx context.Context, channel, user, text string) commandReply {
	fields := strings.Fields(text)
	sub := ""
	if len(fields) > 0 {
		sub = strings.ToLower(fields[0])
	}
	switch sub {
	case "status":
		var st board.Status
		var err error
		if len(fields) > 1 {
			if !boardIDPattern.MatchString(fields[1]) {
				return commandReply{ResponseType: "ephemeral", Text: "That is not a board id; board ids look like b_ followed by 26 letters and digits."}
			}
			st, err = a.eng.BoardStatus(ctx, board.ID(fields[1]))
		} else {
			st, err = a.eng.ChannelStatus(ctx, bot.Channel{Source: bot.SourceSlack, ID: channel})
		}
		switch {
		case errors.Is(err, bot.ErrNotFound):
			return commandReply{ResponseType: "ephemeral", Text: "This channel has no board yet. Mention me with what you want planned, and approve the preview."}
		case err != nil:
			return commandReply{ResponseType: "ephemeral", Text: decisionText(err)}
		}
		url := board.BoardURL(a.cfg.PublicURL, st.Board.ID)
		return commandReply{ResponseType: "in_channel", Text: fallback("Status of " + st.Board.Name), Blocks: StatusBlocks(st, url)}
	case "plan":
		req := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), fields[0]))
		if req == "" {
			return commandReply{ResponseType: "ephemeral", Text: "Say what to plan: `/bobnet plan our product launch`."}
		}
		// A slash command has no message to thread on: post the request
		// so the preview has a thread.
		_, ts, err := a.api.PostMessageContext(ctx, channel, slackapi.MsgOptionText(fmt.Sprintf("<@%s> asked BobNet: %s", user, escape(req)), false))
		if err != nil {
			return commandReply{ResponseType: "ephemeral", Text: "I couldn't post in this channel; invite me first (`/invite @BobNet`)."}
		}
		if _, err := a.eng.Submit(ctx, bot.Request{Thread: bot.Thread{Channel: bot.Channel{Source: bot.SourceSlack, ID: channel}, ID: ts}, User: user, Text: req}); err != nil {
			return commandReply{ResponseType: "ephemeral", Text: decisionText(err)}
		}
		return commandReply{ResponseType: "ephemeral", Text: "On it — the preview will appear in the thread."}
	case "move", "assign", "next":
		return a.cardCommand(ctx, sub, channel, user, fields[1:])
	default:
		return commandReply{ResponseType: "ephemeral", Text: helpText}
	}
}
