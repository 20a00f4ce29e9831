package app

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/secretbox"
)

// Config is every setting BobNet reads, from the environment with flags of
// the same meaning taking precedence. It is validated once at start; each
// problem names the variable it is about.
type Config struct {
	DatabaseURL string
	RedisURL    string
	RedisPrefix string
	// RedisMode is how REDIS_URL is read and Redis reached: one server,
	// a cluster or a sentinel set; RedisStreams how many shards the
	// request stream has (0 until validate: the mode's default).
	RedisMode    redisstore.Mode
	RedisStreams int
	Listen       string
	// AdminListen is the internal listener's address (/metrics without a
	// token), "" for none.
	AdminListen      string
	PublicURL        string
	APIToken         string
	ProposalTTL      time.Duration
	Admins           []string
	AnyMemberDecides bool
	ProfilesDir      string

	OpenAIBaseURL string
	OpenAIAPIKey  string
	Model         string
	// ModelStream is whether the model is asked for streamed answers
	// (BOBNET_MODEL_STREAM), so a plan shows card by card as it comes.
	ModelStream planner.StreamMode
	PlanTimeout time.Duration
	ReclaimIdle time.Duration
	Workers     int
	// RunWorkers and RunDeadline: how many cards of runs this replica
	// works at once, and how long a run may take.
	RunWorkers  int
	RunDeadline time.Duration
	// StreamsPerCaller and Streams cap open event streams per caller and
	// in all (package sse).
	StreamsPerCaller int
	Streams          int

	SlackBotToken      string
	SlackSigningSecret string
	SlackAppToken      string
	SlackAPIURL        string
	// SlackClientID and SlackClientSecret install BobNet into many
	// workspaces through OAuth (docs/slack.md); EncryptionKey and
	// EncryptionKeysOld seal their tokens in Postgres.
	SlackClientID     string
	SlackClientSecret string
	EncryptionKey     string
	EncryptionKeysOld []string

	MatrixHomeserver  string
	MatrixUserID      string
	MatrixAccessToken string
	MatrixPassword    string
	// Matrix invites, rooms and encryption; see docs/matrix.md.
	MatrixAllowedServers []string
	MatrixAllowedRooms   []string
	MatrixPickleKey      string

	HookSecrets map[string]string
	// CallbackSecret signs outbound callbacks; it is never a hook's
	// inbound secret.
	CallbackSecret string

	UserRate    board.RateLimit
	ChannelRate board.RateLimit
	LogFormat   string
	LogLevel    slog.Level

	// secretValues are the values of every secret setting (and their
	// name=value parts), for the logger to keep out of its output.
	secretValues []string
	HooksFile    string
	PolicyFile   string
	// TestClock is a file whose RFC 3339 time the run scheduler reads as
	// now; for tests only (BOBNET_TEST_CLOCK).
	TestClock string
}

// setting ties one variable to its flag and its field. The first
// back-quoted word of usage is the value's type in `serve -h`, as in the
// flag package (no word means a string; booleans show none). Variables
// whose names say they hold a secret are never printed (see secretEnv).
type setting struct {
	env, flag, def, usage string
	set                   func(c *Config, v string) error
}

// intIn sets a whole number from lo to hi.
func intIn(lo, hi int, p func(c *Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("not a whole number from %d to %d: %q", lo, hi, v)
		}
		*p(c) = n
		return nil
	}
}

func str(p func(c *Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *p(c) = strings.TrimSpace(v); return nil }
}

var settings = []setting{
	{"DATABASE_URL", "database-url", "", "Postgres connection `URL`", str(func(c *Config) *string { return &c.DatabaseURL })},
	{"REDIS_URL", "redis-url", "", "Redis `URL`", str(func(c *Config) *string { return &c.RedisURL })},
	{"BOBNET_REDIS_PREFIX", "redis-prefix", "bobnet", "prefix of BobNet's Redis keys", str(func(c *Config) *string { return &c.RedisPrefix })},
	{"BOBNET_REDIS_MODE", "redis-mode", "single", "how REDIS_URL names Redis: `single` (one server), cluster (a Redis Cluster: redis://h1:p1?addr=h2:p2&addr=h3:p3) or sentinel (sentinels watching a master: redis://s1:26379?addr=s2:26379&master_name=NAME)", func(c *Config, v string) error {
		m, err := redisstore.ParseMode(strings.TrimSpace(v))
		c.RedisMode = m
		return err
	}},
	{"BOBNET_REDIS_STREAMS", "redis-streams", "", "shards of the request stream, by channel (an `int` from 1 to 256; default 1, 16 when BOBNET_REDIS_MODE is cluster)", func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			c.RedisStreams = 0
			return nil
		}
		return intIn(1, 256, func(c *Config) *int { return &c.RedisStreams })(c, v)
	}},
	{"BOBNET_LISTEN", "listen", "127.0.0.1:8080", "`host:port` to serve HTTP on", str(func(c *Config) *string { return &c.Listen })},
	{"BOBNET_ADMIN_LISTEN", "admin-listen", "", "`host:port` of a second, internal listener that serves /metrics, /healthz and /readyz without a token and nothing else, e.g. 127.0.0.1:9090 (unset: none; on BOBNET_LISTEN /metrics needs an admin token, as the API does)", func(c *Config, v string) error {
		c.AdminListen = strings.TrimSpace(v)
		if c.AdminListen == "" {
			return nil
		}
		_, port, err := net.SplitHostPort(c.AdminListen)
		if err != nil {
			return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:9090)", v)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: the port is not a number from 1 to 65535", v)
		}
		return nil
	}},
	{"BOBNET_PUBLIC_URL", "public-url", "", "`URL` people reach BobNet at, for board links (default http://BOBNET_LISTEN)", str(func(c *Config) *string { return &c.PublicURL })},
	{"BOBNET_API_TOKEN", "api-token", "", "bearer token for the REST API; without one BobNet listens on loopback only", str(func(c *Config) *string { return &c.APIToken })},
	{"BOBNET_PROPOSAL_TTL", "proposal-ttl", "24h", "how long a proposal waits for a decision (a `duration` from 1m to 720h)", func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("not a duration like 24h or 30m: %q", v)
		}
		if d < time.Minute || d > 30*24*time.Hour {
			return fmt.Errorf("%s is outside 1m..720h", d)
		}
		c.ProposalTTL = d
		return nil
	}},
	{"BOBNET_ADMINS", "admins", "", "comma-separated user ids who may decide any proposal (a `list`)", func(c *Config, v string) error {
		c.Admins = SplitList(v)
		return nil
	}},
	{"BOBNET_ANY_MEMBER_DECIDES", "any-member-decides", "false", "let anyone in the channel approve, revise or cancel", func(c *Config, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("not true or false: %q", v)
		}
		c.AnyMemberDecides = b
		return nil
	}},
	{"BOBNET_PROFILES_DIR", "profiles-dir", "", "folder of AGENT.md assignee profiles (default: the four built-in ones)", str(func(c *Config) *string { return &c.ProfilesDir })},
	{"OPENAI_BASE_URL", "openai-base-url", "http://127.0.0.1:11434/v1", "OpenAI-compatible API base `URL` (OpenAI, Ollama, vLLM, llama.cpp)", str(func(c *Config) *string { return &c.OpenAIBaseURL })},
	{"OPENAI_API_KEY", "openai-api-key", "", "API key for the model server", str(func(c *Config) *string { return &c.OpenAIAPIKey })},
	{"BOBNET_MODEL", "model", "llama3.1", "model name", str(func(c *Config) *string { return &c.Model })},
	{"BOBNET_MODEL_STREAM", "model-stream", "auto", "ask the model for streamed answers, so chat shows a plan card by card while it is written: auto (stream, and ask plainly from then on where the server refuses or ignores streamed requests), on or off", func(c *Config, v string) error {
		m, err := planner.ParseStreamMode(v)
		if err != nil {
			return err
		}
		c.ModelStream = m
		return nil
	}},
	{"BOBNET_PLAN_TIMEOUT", "plan-timeout", "120s", "how long one planning call may take (a `duration`)", func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("not a positive duration: %q", v)
		}
		c.PlanTimeout = d
		return nil
	}},
	{"BOBNET_RECLAIM_IDLE", "reclaim-idle", "1m", "how long a request may sit with a worker that stopped renewing its lease before another replica takes it over (a `duration` from 3s to 1h)", func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 3*time.Second || d > time.Hour {
			return fmt.Errorf("not a duration from 3s to 1h: %q", v)
		}
		c.ReclaimIdle = d
		return nil
	}},
	{"BOBNET_RUN_WORKERS", "run-workers", "2", "cards of board runs worked at once by the model (an `int` from 1 to 64)", func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("not a whole number from 1 to 64: %q", v)
		}
		c.RunWorkers = n
		return nil
	}},
	{"BOBNET_RUN_DEADLINE", "run-deadline", "23h", "how long a run of a board may take before it times out (a `duration` from 1m to 168h)", func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Minute || d > 168*time.Hour {
			return fmt.Errorf("not a duration from 1m to 168h: %q", v)
		}
		c.RunDeadline = d
		return nil
	}},
	{"BOBNET_WORKERS", "workers", "4", "planning workers (an `int` from 1 to 256)", func(c *Config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 256 {
			return fmt.Errorf("not a whole number from 1 to 256: %q", v)
		}
		c.Workers = n
		return nil
	}},
	{"BOBNET_STREAMS_PER_CALLER", "streams-per-caller", "16", "open event streams (console channels and boards together) one caller may hold: a token, or an address without one (an `int` from 1 to 100000)", intIn(1, 100000, func(c *Config) *int { return &c.StreamsPerCaller })},
	{"BOBNET_STREAMS", "streams", "1000", "open event streams in all, per replica (an `int` from 1 to 100000)", intIn(1, 100000, func(c *Config) *int { return &c.Streams })},
	{"SLACK_BOT_TOKEN", "slack-bot-token", "", "Slack bot token (xoxb-…)", str(func(c *Config) *string { return &c.SlackBotToken })},
	{"SLACK_SIGNING_SECRET", "slack-signing-secret", "", "Slack signing secret", str(func(c *Config) *string { return &c.SlackSigningSecret })},
	{"SLACK_APP_TOKEN", "slack-app-token", "", "Slack app-level token (xapp-…) for Socket Mode", str(func(c *Config) *string { return &c.SlackAppToken })},
	{"SLACK_API_URL", "slack-api-url", "", "override of Slack's API base `URL`, for tests", str(func(c *Config) *string { return &c.SlackAPIURL })},
	{"SLACK_CLIENT_ID", "slack-client-id", "", "the Slack app's client id; with SLACK_CLIENT_SECRET, BobNet is installed into many workspaces through /slack/install instead of using SLACK_BOT_TOKEN", str(func(c *Config) *string { return &c.SlackClientID })},
	{"SLACK_CLIENT_SECRET", "slack-client-secret", "", "the Slack app's client secret, for OAuth installs", str(func(c *Config) *string { return &c.SlackClientSecret })},
	{"BOBNET_ENCRYPTION_KEY", "encryption-key", "", "`key` that seals the Slack tokens of OAuth installs in Postgres: the base64 of 32 random bytes, as openssl rand -base64 32 prints", func(c *Config, v string) error {
		c.EncryptionKey = strings.TrimSpace(v)
		if c.EncryptionKey == "" {
			return nil
		}
		_, err := secretbox.ParseKey(c.EncryptionKey)
		return err
	}},
	{"BOBNET_ENCRYPTION_KEYS_OLD", "encryption-keys-old", "", "earlier BOBNET_ENCRYPTION_KEY values, comma-separated, still opened while what they sealed is sealed again under the newest key, at start and every minute (a `list`)", func(c *Config, v string) error {
		c.EncryptionKeysOld = SplitList(v)
		for i, k := range c.EncryptionKeysOld {
			if _, err := secretbox.ParseKey(k); err != nil {
				return fmt.Errorf("key %d: %w", i+1, err)
			}
		}
		return nil
	}},
	{"MATRIX_HOMESERVER", "matrix-homeserver", "", "Matrix homeserver `URL`", str(func(c *Config) *string { return &c.MatrixHomeserver })},
	{"MATRIX_USER_ID", "matrix-user-id", "", "the bot's Matrix user id", str(func(c *Config) *string { return &c.MatrixUserID })},
	{"MATRIX_ACCESS_TOKEN", "matrix-access-token", "", "the bot's Matrix access token", str(func(c *Config) *string { return &c.MatrixAccessToken })},
	{"MATRIX_PASSWORD", "matrix-password", "", "the bot's Matrix password (when no access token)", str(func(c *Config) *string { return &c.MatrixPassword })},
	{"MATRIX_ALLOWED_SERVERS", "matrix-allowed-servers", "", "servers whose users may invite the bot (default: the bot's own)", func(c *Config, v string) error {
		c.MatrixAllowedServers = SplitList(v)
		return nil
	}},
	{"MATRIX_ALLOWED_ROOMS", "matrix-allowed-rooms", "", "room ids the bot joins when invited, whoever invites", func(c *Config, v string) error {
		c.MatrixAllowedRooms = SplitList(v)
		return nil
	}},
	{"MATRIX_PICKLE_KEY", "matrix-pickle-key", "", "secret that seals the bot's encryption keys in Postgres; setting it turns on end-to-end encryption", str(func(c *Config) *string { return &c.MatrixPickleKey })},
	{"BOBNET_HOOK_SECRETS", "hook-secrets", "", "webhook secrets as name=secret,name=secret (a `list`)", func(c *Config, v string) error {
		c.HookSecrets = map[string]string{}
		for _, item := range SplitList(v) {
			name, secret, ok := strings.Cut(item, "=")
			name, secret = strings.TrimSpace(name), strings.TrimSpace(secret)
			if !ok || name == "" || secret == "" {
				return fmt.Errorf("%q is not name=secret", item)
			}
			c.HookSecrets[name] = secret
		}
		return nil
	}},
	{"BOBNET_CALLBACK_SECRET", "callback-secret", "", "Standard Webhooks secret (`whsec_…`) that signs outbound callbacks; required when callbacks are configured", func(c *Config, v string) error {
		c.CallbackSecret = strings.TrimSpace(v)
		if c.CallbackSecret == "" {
			return nil
		}
		return webhook.CheckCallbackSecret(c.CallbackSecret)
	}},
	{"BOBNET_USER_RATE", "user-rate", "20/1m", "requests one user may make (a `rate` like 20/1m)", func(c *Config, v string) (err error) {
		c.UserRate, err = parseRate(v)
		return err
	}},
	{"BOBNET_CHANNEL_RATE", "channel-rate", "60/1m", "requests one channel may make (a `rate` like 60/1m)", func(c *Config, v string) (err error) {
		c.ChannelRate, err = parseRate(v)
		return err
	}},
	{"BOBNET_LOG_FORMAT", "log-format", "text", "log lines as text or json (a `format`)", func(c *Config, v string) error {
		switch f := strings.ToLower(strings.TrimSpace(v)); f {
		case "text", "json":
			c.LogFormat = f
			return nil
		}
		return fmt.Errorf("not text or json: %q", v)
	}},
	{"BOBNET_LOG_LEVEL", "log-level", "info", "least important log lines to write: debug, info, warn or error (a `level`)", func(c *Config, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
			return fmt.Errorf("not debug, info, warn or error: %q", v)
		}
		return nil
	}},
	{"BOBNET_HOOKS_FILE", "hooks-file", "", "YAML file of per-hook targets, deciders, filters, templates and callbacks", str(func(c *Config) *string { return &c.HooksFile })},
	{"BOBNET_POLICY_FILE", "policy-file", "", "YAML file of approval policies and model budgets per channel, written to Postgres at start", str(func(c *Config) *string { return &c.PolicyFile })},
	{"BOBNET_TEST_CLOCK", "test-clock", "", "for tests only: a `file` holding an RFC 3339 time that the run scheduler and the schedules API read as now, looked at every second (unset: the real clock); refused unless BOBNET_LISTEN is loopback", str(func(c *Config) *string { return &c.TestClock })},
}

// parseRate reads a rate limit written as N/duration ("20/1m", "5/10s");
// a bare unit stands for one of it ("20/m").
func parseRate(v string) (board.RateLimit, error) {
	bad := fmt.Errorf("not a rate like 20/1m: %q", v)
	n, per, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return board.RateLimit{}, bad
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return board.RateLimit{}, bad
	}
	per = strings.TrimSpace(per)
	if per != "" && (per[0] < '0' || per[0] > '9') {
		per = "1" + per
	}
	d, err := time.ParseDuration(per)
	if err != nil || d < time.Second || d > 24*time.Hour {
		return board.RateLimit{}, fmt.Errorf("not a rate like 20/1m with a period from 1s to 24h: %q", v)
	}
	return board.RateLimit{N: count, Per: d}, nil
}

// SplitList reads a comma-separated setting: its items, trimmed, without
// empty ones. Every list of BobNet's command line is read this way.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
