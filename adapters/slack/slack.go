package slack

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/valyala/fastjson"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Engine is what the Slack adapter needs from the bot engine: what every
// chat surface asks, the proposal a click or a modal is about, and the
// App Home's reads; *bot.Engine is one.
type Engine interface {
	bot.Surface
	HomeEngine
	Proposal(ctx context.Context, id board.ProposalID) (board.Proposal, error)
	// Request is where a request stands, so a thread status is renewed
	// only while it is planned.
	Request(ctx context.Context, id board.RequestID) (board.RequestStatus, error)
}

// Memory remembers event ids, the threads the bot speaks in, who opened
// the App Home, how requests are shown and the looks at threads due
// later, across replicas and restarts; *redisstore.InFlight is one.
type Memory interface {
	SeenOnce(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Mark(ctx context.Context, key string, ttl time.Duration) error
	Marked(ctx context.Context, key string) (bool, error)
	HomeViewers
	Showings
	Dues
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
	// StatusEvery is how often a thread's "is planning…" status is set
	// again while its request is planned (default 90s: Slack clears a
	// status after two minutes).
	StatusEvery time.Duration
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
	// pace is the per-channel budget of the calls that show work in
	// progress (pace.go); statuses the thread statuses being renewed
	// (status.go); drafts the drafts being shown (drafts.go); runs the
	// runs' progress messages (runs.go); refusals the refusal marks read
	// lately (refusals.go); statusBudget each workspace's budget of thread
	// statuses (status.go).
	pace         *pacer
	statuses     *statuses
	drafts       *drafts
	runs         *runMessages
	refusals     *refusals
	statusBudget *statusBudget
	parsers      fastjson.ParserPool // for event bodies (envelope.go)
}

// slackConns is how many idle connections to Slack's API are kept: as
// many as the after-the-ack jobs and the statuses of a burst of mentions.
const slackConns = 128

// backgroundSlots is how many after-the-ack jobs (decisions, help
// replies, slash-command posts) may run at once; past it new ones are
// refused with a log line rather than piling up behind a stalled Slack.
const backgroundSlots = 64

// New returns a Slack adapter. work is the server's lifetime: decisions
// started after an ack finish within it, and the adapter takes the looks
// at threads due from any replica (sweeps.go) until it ends.
func New(work context.Context, cfg Config, eng Engine, memory Memory, logger *slog.Logger) (*Adapter, error) {
	if cfg.BotToken == "" && cfg.OAuth == nil {
		return nil, errors.New("SLACK_BOT_TOKEN is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	// Every call goes to one host (slack.com): keep as many connections
	// idle as calls run at once, not net/http's default of two, which
	// dialled (and, against Slack, shook hands) again for nearly every
	// thread status under a burst of mentions.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = slackConns
	hc := &http.Client{Timeout: cfg.Timeout, Transport: tr}
	opts := []slackapi.Option{slackapi.OptionHTTPClient(hc)}
	if cfg.APIURL != "" {
		opts = append(opts, slackapi.OptionAPIURL(strings.TrimRight(cfg.APIURL, "/")+"/"))
	}
	if cfg.StatusEvery <= 0 {
		cfg.StatusEvery = 90 * time.Second
	}
	a := &Adapter{
		cfg: cfg, eng: eng, memory: memory,
		logger: logger, work: work,
		slots: make(chan struct{}, backgroundSlots), reading: make(chan struct{}, readingSlots),
		statuses: newStatuses(), drafts: newDrafts(), runs: newRunMessages(), refusals: newRefusals(),
		statusBudget: newStatusBudget(),
	}
	a.pace = newPacer(time.Now)
	if cfg.OAuth != nil {
		if err := a.useOAuth(hc, opts); err != nil {
			return nil, err
		}
	}
	if cfg.AppToken != "" {
		opts = append(opts, slackapi.OptionAppLevelToken(cfg.AppToken))
	}
	a.api = slackapi.New(cfg.BotToken, opts...)
	go a.takeSweeps()
	return a, nil
}

// afterAck runs fn after the ack, in a tracked goroutine bounded by the
// server's lifetime and the Web API timeout (twice: a decision may post
// twice), so nothing slow sits on the path that answers Slack.
func (a *Adapter) afterAck(what string, fn func(ctx context.Context)) {
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
