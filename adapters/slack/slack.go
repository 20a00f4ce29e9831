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
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/signing"
)

// Engine is what the Slack adapter needs from the bot engine.
type Engine interface {
	Submit(ctx context.Context, r bot.Request) (bot.RequestID, error)
	Approve(ctx context.Context, id bot.ProposalID, user string) (bot.Approval, error)
	CancelWithReason(ctx context.Context, id bot.ProposalID, user, reason string) (bot.Proposal, error)
	Revise(ctx context.Context, id bot.ProposalID, user, feedback string) (bot.RequestID, error)
	ProposeAgain(ctx context.Context, id bot.ProposalID, user string) (bot.RequestID, error)
	Authorize(ctx context.Context, id bot.ProposalID, user string) (bot.Proposal, error)
	Proposal(ctx context.Context, id bot.ProposalID) (bot.Proposal, error)
	ChannelStatus(ctx context.Context, ch bot.Channel) (board.Status, error)
	BoardStatus(ctx context.Context, id board.ID) (board.Status, error)
	MoveCard(ctx context.Context, ch bot.Channel, user, ref, status string) (board.CardUpdate, error)
	AssignCard(ctx context.Context, ch bot.Channel, user, ref, profile string) (board.CardUpdate, error)
	NextCards(ctx context.Context, ch bot.Channel) (board.Status, error)
	StartRun(ctx context.Context, ch bot.Channel, user, ref string) (board.Run, error)
	RecentRuns(ctx context.Context, ch bot.Channel, ref string) (board.Board, []board.Run, error)
	ReviewByHandle(ctx context.Context, ch bot.Channel, user, ref string, accept bool, reason string) (board.CardUpdate, error)
	Schedule(ctx context.Context, ch bot.Channel, user string, c bot.ScheduleCommand) (string, error)
	RunsLine(ctx context.Context, b board.Board) string
	Reviewer
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
	// Timeout bounds every Web API call (default 10s): slack-go's default
	// HTTP client has none, and a stalled Slack must not hold anything.
	Timeout time.Duration
	// OAuth, when set, installs BobNet into many workspaces instead of
	// using BotToken (oauth.go).
	OAuth *OAuthConfig
}

// Adapter is BobNet in Slack; it is also the engine's poster for Slack
// channels.
type Adapter struct {
	cfg    Config
	api    *slackapi.Client
	teams  *teams // per-workspace clients; nil with one workspace
	eng    Engine
	memory Memory
	logger *slog.Logger
	// work bounds the goroutines that finish work after the ack.
	work context.Context
	// background tracks those goroutines, so shutdown can wait for them;
	// slots bounds how many run at once.
	background sync.WaitGroup
	slots      chan struct{}
	// reading bounds the bodies being read before their signature is known.
	reading chan struct{}
	homes   homeLocks // App Home publishes: home.go
}

// backgroundSlots is how many after-the-ack jobs (decisions, help
// replies, slash-command posts) may run at once; past it new ones are
// refused with a log line rather than piling up behind a stalled Slack.
const backgroundSlots = 64

// New returns a Slack adapter. work is the server's lifetime: decisions
// started after an ack finish within it.
func New(work context.Context, cfg Config, eng Engine, memory Memory, logger *slog.Logger) (*Adapter, error) {
	if cfg.BotToken == "" && cfg.OAuth == nil {
		return nil, errors.New("SLACK_BOT_TOKEN is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	hc := &http.Client{Timeout: cfg.Timeout}
	opts := []slackapi.Option{slackapi.OptionHTTPClient(hc)}
	if cfg.APIURL != "" {
		opts = append(opts, slackapi.OptionAPIURL(strings.TrimRight(cfg.APIURL, "/")+"/"))
	}
	a := &Adapter{
		cfg: cfg, eng: eng, memory: memory,
		logger: logger, work: work,
		slots: make(chan struct{}, backgroundSlots), reading: make(chan struct{}, readingSlots),
	}
	if cfg.OAuth != nil {
		if err := a.useOAuth(hc, opts); err != nil {
			return nil, err
		}
	}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	a.api = slackapi.New(cfg.BotToken, opts...)
	return a, nil
}

// later runs fn after the ack, in a tracked goroutine bounded by the
// server's lifetime and the Web API timeout (twice: a decision may post
// twice), so nothing slow sits on the path that answers Slack.
func (a *Adapter) later(what string, fn func(ctx context.Context)) {
	select {
	case a.slots <- struct{}{}:
	default:
		a.logger.Warn("slack: too much work after acks; dropped", "what", what)
		return
	}
	a.background.Add(1)
	go func() {
		defer a.background.Done()
		defer func() { <-a.slots }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.work), 3*a.cfg.Timeout)
		defer cancel()
		fn(ctx)
	}()
}

// Wait waits until the work started after acks has finished, or ctx ends.
func (a *Adapter) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		a.background.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Body caps per endpoint: what Slack sends is far smaller (an event with a
// 40,000-character message, a click on a 50-block message, a slash
// command's form), and nothing is read past them.
const (
	maxEventBody       = 256 << 10
	maxInteractionBody = 512 << 10
	maxCommandBody     = 16 << 10
)

// readingSlots bounds how many request bodies are read at once before
// their signature is known; past it a request is refused at once with 503
// (Slack retries), so slow uploads cannot pile up memory and goroutines.
const readingSlots = 128

// Routes mounts the three signed endpoints.
func (a *Adapter) Routes(r chi.Router) {
	r.Post("/slack/events", a.signed(maxEventBody, a.events))
	r.Post("/slack/interactivity", a.signed(maxInteractionBody, a.interactivity))
	r.Post("/slack/commands", a.signed(maxCommandBody, a.commands))
}

// signed checks Slack's signature headers, then reads the body (capped,
// with a bounded number of reads at once), checks the signature and hands
// the raw body on. A missing, stale or bad signature is a 401 and nothing
// else; only a request whose headers pass has its body read at all.
func (a *Adapter) signed(limit int64, next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := signing.CheckSlackHeaders(r.Header, a.now()); err != nil {
			a.logger.Warn("slack request refused", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if err := signing.CheckLength(r, limit); err != nil {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		select {
		case a.reading <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		body, err := signing.ReadBody(w, r, limit)
		<-a.reading
		if err != nil {
			http.Error(w, "request too large or incomplete", http.StatusRequestEntityTooLarge)
			return
		}
		if err := signing.VerifySlack(r.Header, a.cfg.SigningSecret, body, a.now()); err != nil {
			a.logger.Warn("slack request refused", "path", r.URL.Path, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}

// eventEnvelope is the Events API's outer object.
type eventEnvelope struct {
	Type           string          `json:"type"`
	Challenge      string          `json:"challenge"`
	TeamID         string          `json:"team_id"`
	EnterpriseID   string          `json:"enterprise_id"`
	Authorizations []authorization `json:"authorizations"`
	EventID        string          `json:"event_id"`
	Event          innerEvent      `json:"event"`
	// installation is the workspace the event was scoped to
	// (multi-workspace mode).
	installation string
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
	// Tokens are what a tokens_revoked event revokes.
	Tokens struct {
		Bot []string `json:"bot"`
	} `json:"tokens"`
	Tab string `json:"tab"` // app_home_opened
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

// nextMention finds the first mention markup (the bot's or anyone's) in s
// at or after from: "<@", a user id of capitals and digits, then ">" or
// "|" and a label up to ">". It is the regular expression
// <@[A-Z0-9]+(\|[^>]*)?> written out: every mention is stripped on the ack
// path, where the regexp package's matcher cost more than the rest of
// reading the event but one; TestMentionsMatchRegexp holds the two to the
// same matches.
func nextMention(s string, from int) (start, end int, ok bool) {
	for {
		i := strings.Index(s[from:], "<@")
		if i < 0 {
			return 0, 0, false
		}
		start = from + i
		j := start + 2
		for j < len(s) && ('A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		if j > start+2 && j < len(s) {
			switch s[j] {
			case '>':
				return start, j + 1, true
			case '|':
				if k := strings.IndexByte(s[j:], '>'); k >= 0 {
					return start, j + k + 1, true
				}
			}
		}
		from = start + 1
	}
}

// stripMentions is s without its mention markup.
func stripMentions(s string) string {
	start, end, ok := nextMention(s, 0)
	if !ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) - (end - start))
	from := 0
	for ok {
		b.WriteString(s[from:start])
		from = end
		start, end, ok = nextMention(s, from)
	}
	b.WriteString(s[from:])
	return b.String()
}

// handleEvent turns one event into a request. Shared by HTTP and Socket
// Mode, so both dedupe the same way: by the message's ts (or the event
// id), whatever the transport says about retries.
func (a *Adapter) handleEvent(ctx context.Context, env eventEnvelope) error {
	if ok, err := a.scopeEvent(ctx, &env); !ok {
		return err
	}
	if env.Type != "event_callback" {
		return nil
	}
	ev := env.Event
	if ev.BotID != "" || ev.User == "" || (ev.Subtype != "" && ev.Subtype != "thread_broadcast") {
		return nil // bots, edits, joins: not requests
	}
	switch ev.Type {
	case "app_home_opened":
		a.homeOpened(env.installation, ev.User, ev.Tab)
		return nil
	case "app_mention":
	case "message":
		// A message counts only inside a thread the bot speaks in, where
		// it is the conversation with the bot whoever else it mentions. One
		// that mentions the bot also arrives as app_mention, with the same
		// ts: the dedupe key below makes the two one request.
		if ev.ThreadTS == "" {
			return nil
		}
		in, err := a.memory.Marked(ctx, threadKey(ev.Channel, ev.ThreadTS))
		if err != nil {
			// Unavailable, so the reply is delivered again rather than
			// acked and lost.
			return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
		}
		if !in {
			return nil
		}
	default:
		return nil
	}
	thread := ev.ThreadTS
	if thread == "" {
		thread = ev.TS
	}
	t := bot.Thread{Channel: bot.Channel{Source: bot.SourceSlack, ID: ev.Channel}, ID: thread}
	text := strings.TrimSpace(stripMentions(ev.Text))
	if text == "" && ev.Type == "message" {
		return nil // only mentions, of colleagues or the bot: not a question to BobNet
	}
	if text == "" || strings.EqualFold(text, "help") {
		// Help once a minute per person and channel: retries and floods
		// of empty mentions do not become floods of replies.
		first, err := a.memory.SeenOnce(ctx, "slack-help:"+ev.Channel+":"+ev.User, time.Minute)
		if err != nil {
			return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
		}
		if first {
			a.later("help reply", func(ctx context.Context) {
				if err := a.Reply(ctx, t, bot.Reply{Kind: bot.ReplyInfo, Text: helpText}); err != nil {
					a.logger.Warn("post help", "err", err)
				}
			})
		}
		return nil
	}
	// The engine's intake dedupes by the message's ts (unique in its
	// channel, the same in a retry and in the app_mention and message
	// events of one message) in the same step that queues, so a failed
	// attempt leaves nothing marked and Slack's retry goes through; a later
	// retry answers the first request.
	r := bot.Request{Thread: t, User: ev.User, Text: text}
	switch {
	case ev.TS != "" && a.teams != nil:
		r.DedupeKey = "slack-message:" + ev.Channel + ":" + ev.TS // ts is unique only in its channel
	case ev.TS != "":
		r.DedupeKey = "slack-message:" + ev.TS
	case env.EventID != "":
		r.DedupeKey = "slack:" + env.EventID
	}
	_, err := a.eng.Submit(ctx, r)
	if errors.Is(err, bot.ErrRateLimited) {
		return nil // the engine tells the person, off this path
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
	// Remembered before posting: a person may answer as soon as the
	// message shows.
	a.rememberThread(ctx, t)
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return err
	}
	_, _, err = api.PostMessageContext(ctx, channel,
		slackapi.MsgOptionText(fallback(r.Text), false),
		slackapi.MsgOptionBlocks(replyBlocks(text, r.Review)...),
		slackapi.MsgOptionTS(t.ID))
	return err
}

// UpdatePreview redraws a decided preview in place (chat.update).
func (a *Adapter) UpdatePreview(ctx context.Context, p bot.Proposal) error {
	if p.Message == "" {
		return nil
	}
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return fmt.Errorf("update preview: %w", err)
	}
	_, _, _, err = api.UpdateMessageContext(ctx, channel, string(p.Message),
		slackapi.MsgOptionText(fallback("Proposal "+string(p.State)), false),
		slackapi.MsgOptionBlocks(updatedBlocks(p, a.cfg.PublicURL)...))
	if err != nil {
		return fmt.Errorf("update preview: %w", err)
	}
	a.homeChanged(ctx, p)
	return nil
}

// Notify tells one person something only they see, in the thread.
func (a *Adapter) Notify(ctx context.Context, t bot.Thread, user string, r bot.Reply) error {
	text := escape(r.Text)
	if r.Kind == bot.ReplyError || r.Kind == bot.ReplySlowDown {
		text = ":warning: " + text
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if t.ID != "" {
		opts = append(opts, slackapi.MsgOptionTS(t.ID))
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return err
	}
	_, err = api.PostEphemeralContext(ctx, channel, user, opts...)
	return err
}

// ephemeral tells one user something only they see.
func (a *Adapter) ephemeral(ctx context.Context, channel, thread, user, text string) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	api, id, err := a.web(ctx, channel)
	if err == nil {
		_, err = api.PostEphemeralContext(ctx, id, user, opts...)
	}
	if err != nil {
		a.logger.Warn("post ephemeral", "err", err)
	}
}

// decisionText is what a refused click tells the clicker.
func decisionText(err error) string {
	if text, ok := policyRefusal(err); ok {
		return text
	}
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de) && de.Other != "":
		return fmt.Sprintf("Another version of this plan (%s) was approved, so this one can't be.", escape(string(de.Other)))
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
	case errors.Is(err, errWrongPlace):
		return "That button does not belong to a proposal of this channel; nothing was changed."
	case errors.Is(err, bot.ErrRateLimited):
		return "Slow down: too many requests right now. Try again in a minute."
	}
	return "That did not work, and nothing was changed. Try again, or ask me for a new plan."
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
	case slackapi.InteractionTypeBlockActions, slackapi.InteractionTypeMessageAction:
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
	if a.interaction(ctx, cb) {
		return // the "Plan this" shortcut and the App Home: shortcut.go
	}
	user, channel := cb.User.ID, a.callbackChannel(cb)
	thread := cb.Message.ThreadTimestamp
	if thread == "" {
		thread = cb.Container.ThreadTs
	}
	for _, act := range cb.ActionCallback.BlockActions {
		if a.reviewClick(ctx, cb, act) {
			continue
		}
		switch act.ActionID {
		case actionRevise, actionApprove, actionCancel, actionProposeAgain, actionWithdraw:
		default:
			continue
		}
		// A malformed value names no proposal: the clicker is told so,
		// as for a proposal that is gone.
		id, err := bot.ParseProposalID(act.Value)
		if err != nil {
			a.later("refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, decisionText(err)) })
			continue
		}
		message := cb.Message.Timestamp
		if message == "" {
			message = cb.Container.MessageTs
		}
		switch act.ActionID {
		case actionRevise:
			// The trigger id lives 3 s: check and open the modal now.
			p, err := a.eng.Authorize(ctx, id, user)
			if err == nil {
				err = clickedWhereProposed(p, channel, message)
			}
			if err != nil {
				a.later("refusal", func(ctx context.Context) { a.ephemeral(ctx, channel, thread, user, decisionText(err)) })
				continue
			}
			api, _, err := a.web(ctx, channel)
			if err == nil {
				_, err = api.OpenViewContext(ctx, cb.TriggerID, reviseModal(p))
			}
			if err != nil {
				a.logger.Warn("open revise modal", "proposal", id, "err", err)
			}
		case actionCancel:
			a.openCancel(ctx, cb.TriggerID, id, user, channel, message, thread) // cancel.go
		case actionApprove, actionProposeAgain, actionWithdraw:
			// A decision writes Postgres and posts; finish it after the
			// ack, bounded by the server's lifetime rather than this
			// request's.
			action := act.ActionID
			a.later("decision", func(ctx context.Context) { a.decide(ctx, action, id, user, channel, message, thread) })
		}
	}
}

// errWrongPlace is a click whose payload names another channel or message
// than the one its proposal was posted to.
var errWrongPlace = errors.New("click from another channel or message")

// clickedWhereProposed checks that a click came from the channel (and
// message) the proposal was posted to: a payload naming another channel
// must not decide this channel's proposals.
func clickedWhereProposed(p bot.Proposal, channel, message string) error {
	if p.Thread.Channel.Source != bot.SourceSlack || p.Thread.Channel.ID != channel {
		return errWrongPlace
	}
	if p.Message != "" && message != "" && string(p.Message) != message {
		return errWrongPlace
	}
	return nil
}

func (a *Adapter) decide(ctx context.Context, action string, id bot.ProposalID, user, channel, message, thread string) {
	p, err := a.eng.Proposal(ctx, id)
	if err == nil {
		err = clickedWhereProposed(p, channel, message)
	}
	if err != nil {
		if errors.Is(err, errWrongPlace) {
			a.logger.Warn("slack click refused: not where its proposal was posted", "proposal", id, "channel", channel)
		}
		a.ephemeral(ctx, channel, thread, user, decisionText(err))
		return
	}
	switch action {
	case actionApprove:
		var ap bot.Approval
		if ap, err = a.eng.Approve(ctx, id, user); err == nil && ap.State == bot.ProposalPending {
			a.ephemeral(ctx, channel, thread, user, approvalText(ap))
		}
	case actionProposeAgain:
		_, err = a.eng.ProposeAgain(ctx, id, user)
	case actionWithdraw:
		err = a.withdraw(ctx, id, user, channel, thread)
	}
	if err != nil {
		a.ephemeral(ctx, channel, thread, user, decisionText(err))
	}
}

// reviseMeta is what the modal carries back.
type reviseMeta struct {
	// Proposal is parsed on the way back: the metadata is a client's
	// text like any other.
	Proposal string `json:"p"`
	Channel  string `json:"c"`
	Thread   string `json:"t"`
}

func reviseModal(p bot.Proposal) slackapi.ModalViewRequest {
	meta, _ := json.Marshal(reviseMeta{Proposal: string(p.ID), Channel: p.Thread.Channel.ID, Thread: p.Thread.ID})
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
	if cb.View.CallbackID == sendBackCallback {
		return a.submitSendBack(ctx, cb) // review.go
	}
	if cb.View.CallbackID == cancelCallback {
		return a.submitCancel(cb) // cancel.go
	}
	if cb.View.CallbackID != reviseCallback {
		return nil
	}
	var meta reviseMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	feedback := strings.TrimSpace(cb.View.State.Values[feedbackBlock][feedbackInput].Value)
	if feedback == "" {
		return map[string]any{"response_action": "errors", "errors": map[string]string{feedbackBlock: "Say what should change."}}
	}
	id, err := bot.ParseProposalID(meta.Proposal)
	if err == nil {
		_, err = a.eng.Revise(ctx, id, cb.User.ID, feedback)
	}
	if err != nil {
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

func (a *Adapter) commands(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	channel, ok := a.commandChannel(r.Context(), form.Get("team_id"), form.Get("enterprise_id"), form.Get("is_enterprise_install"), form.Get("channel_id"))
	if !ok {
		writeJSON(w, notInstalled)
		return
	}
	writeJSON(w, a.command(r.Context(), channel, form.Get("user_id"), form.Get("text"), form.Get("trigger_id")))
}

// noSuchBoard answers a status request naming a board id nobody made.
const noSuchBoard = "There is no board with that id. Board ids are long and exact: check that the whole id was copied."

// command answers /bobnet; shared by HTTP and Socket Mode. trigger is the
// command's trigger id, unique per invocation: a replayed command carries
// the same one and is not run again.
func (a *Adapter) command(ctx context.Context, channel, user, text, trigger string) commandReply {
	fields := strings.Fields(text)
	sub := ""
	if len(fields) > 0 {
		sub = strings.ToLower(fields[0])
	}
	switch sub {
	case "policy":
		return a.policyCommand(ctx, channel)
	case "status":
		var st board.Status
		var err error
		if len(fields) > 1 {
			id, perr := board.ParseID(fields[1])
			if perr != nil {
				return commandReply{ResponseType: "ephemeral", Text: "That is not a board id; board ids look like b_ followed by 26 letters and digits."}
			}
			st, err = a.eng.BoardStatus(ctx, id)
		} else {
			st, err = a.eng.ChannelStatus(ctx, bot.Channel{Source: bot.SourceSlack, ID: channel})
		}
		switch {
		case errors.Is(err, bot.ErrNotFound) && len(fields) > 1:
			return commandReply{ResponseType: "ephemeral", Text: noSuchBoard}
		case errors.Is(err, bot.ErrNotFound):
			return commandReply{ResponseType: "ephemeral", Text: "This channel has no board yet. Mention me with what you want planned, and approve the preview." + a.budgetLine(ctx, channel)}
		case err != nil:
			return commandReply{ResponseType: "ephemeral", Text: decisionText(err)}
		}
		url := board.BoardURL(a.cfg.PublicURL, st.Board.ID)
		blocks := StatusBlocks(st, url)
		if line := a.eng.RunsLine(ctx, st.Board); line != "" {
			blocks = append(blocks, contextBlock(escape(line)))
		}
		if line := a.budgetLine(ctx, channel); line != "" {
			blocks = append(blocks, contextBlock(strings.TrimSpace(line)))
		}
		return commandReply{ResponseType: "in_channel", Text: fallback("Status of " + st.Board.Name), Blocks: blocks}
	case "plan":
		req := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), fields[0]))
		if req == "" {
			return commandReply{ResponseType: "ephemeral", Text: "Say what to plan: `/bobnet plan our product launch`."}
		}
		if trigger == "" {
			return commandReply{ResponseType: "ephemeral", Text: "That command came without a trigger id, so I can't tell it from a replay; nothing was done."}
		}
		first, err := a.memory.SeenOnce(ctx, "slack-command:"+trigger, 24*time.Hour)
		if err != nil {
			return commandReply{ResponseType: "ephemeral", Text: decisionText(fmt.Errorf("%w: %w", bot.ErrUnavailable, err))}
		}
		if !first {
			return commandReply{ResponseType: "ephemeral", Text: "Already on it."}
		}
		// A slash command has no message to thread on: post the request
		// so the preview has a thread, after the ack.
		rid := bot.NewRequestID()
		a.later("slash plan", func(ctx context.Context) {
			api, id, err := a.web(ctx, channel)
			var ts string
			if err == nil {
				_, ts, err = api.PostMessageContext(ctx, id, slackapi.MsgOptionText(fmt.Sprintf("<@%s> asked BobNet: %s", escape(user), escape(req)), false))
			}
			if err != nil {
				a.logger.Warn("post slash-command request", "request", rid, "err", err)
				a.ephemeral(ctx, channel, "", user, "I couldn't post in this channel; invite me first (`/invite @BobNet`).")
				return
			}
			t := bot.Thread{Channel: bot.Channel{Source: bot.SourceSlack, ID: channel}, ID: ts}
			if _, err := a.eng.Submit(ctx, bot.Request{ID: rid, Thread: t, User: user, Text: req, DedupeKey: "slack-command:" + trigger}); err != nil && !errors.Is(err, bot.ErrRateLimited) {
				a.ephemeral(ctx, channel, ts, user, decisionText(err))
			}
		})
		return commandReply{ResponseType: "ephemeral", Text: "On it — the preview will appear in the thread."}
	case "move", "assign", "next":
		return a.cardCommand(ctx, sub, channel, user, fields[1:])
	case "run", "runs", "accept", "sendback", "schedule":
		return a.runCommand(ctx, sub, channel, user, trigger, fields[1:])
	default:
		return commandReply{ResponseType: "ephemeral", Text: helpText}
	}
}
