package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/signing"
)

// secretEnv reports whether a variable holds a secret by its name, so a
// setting added later is kept out of help and errors without anyone having
// to remember to mark it.
func secretEnv(env string) bool {
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "API_KEY", "PICKLE_KEY", "ENCRYPTION_KEY"} {
		if strings.Contains(env, w) {
			return true
		}
	}
	return false
}

// holdsSecret reports whether a variable's value must be kept in a secret
// store: a secret, or a connection URL that may carry a password.
func holdsSecret(env string) bool {
	return secretEnv(env) || env == "DATABASE_URL" || env == "REDIS_URL"
}

// settingValue is one setting as a flag: it starts from the environment
// (or the default) and a flag replaces it.
type settingValue struct {
	s       *setting
	v       string
	fromEnv bool
}

func (v *settingValue) String() string {
	if v == nil || v.s == nil {
		return ""
	}
	return v.display()
}

// Set takes the flag's value; checking it is left to the setting, after all
// flags are read, so every problem is reported at once.
func (v *settingValue) Set(s string) error {
	v.v, v.fromEnv = s, false
	return nil
}

// IsBoolFlag lets a boolean setting be given as a bare -flag.
func (v *settingValue) IsBoolFlag() bool { return v.s.def == "true" || v.s.def == "false" }

// display is the value as help may show it: secrets as (set), passwords
// in URLs masked.
func (v *settingValue) display() string {
	switch {
	case v.v == "":
		return ""
	case secretEnv(v.s.env):
		return "(set)"
	default:
		return redactURLs(v.v)
	}
}

// LoadConfig reads the environment (through getenv) and then the flags in
// args, and validates the result. All problems are reported together.
func LoadConfig(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	var c Config
	vals := make([]*settingValue, len(settings))
	for i := range settings {
		s := &settings[i]
		v := &settingValue{s: s, v: s.def}
		if e := getenv(s.env); e != "" {
			v.v, v.fromEnv = e, true
		}
		vals[i] = v
		fs.Var(v, s.flag, s.usage)
	}
	fs.Usage = func() { printUsage(fs.Output(), fs.Name(), vals) }
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, newConfigError([]error{fmt.Errorf("unexpected arguments %q: settings are flags or environment variables", fs.Args())})
	}
	var errs []error
	for i, s := range settings {
		if err := s.set(&c, vals[i].v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.env, err))
		}
		if secretEnv(s.env) && vals[i].v != "" {
			c.secretValues = append(c.secretValues, vals[i].v)
			for _, item := range SplitList(vals[i].v) {
				_, val, _ := strings.Cut(item, "=")
				c.secretValues = append(c.secretValues, item, strings.TrimSpace(val))
			}
		}
	}
	errs = append(errs, c.validate()...)
	return c, newConfigError(errs)
}

// printUsage lists every setting with its type, default and variable. The
// value from the environment is shown so an operator can see what is in
// effect, except that secrets only say (set) and URL passwords are masked.
func printUsage(w io.Writer, name string, vals []*settingValue) {
	fmt.Fprintf(w, "usage: %s [flags]\n\nEvery flag may instead be set by the environment variable named beside it.\n\n", name)
	for _, v := range vals {
		typ := settingType(v.s)
		_, usage := flag.UnquoteUsage(&flag.Flag{Usage: v.s.usage})
		if typ != "" {
			typ = " " + typ
		}
		fmt.Fprintf(w, "  -%s%s\n    \t%s\n    \t$%s", v.s.flag, typ, usage, v.s.env)
		if v.s.def != "" {
			fmt.Fprintf(w, ", default %s", v.s.def)
		}
		if v.fromEnv {
			fmt.Fprintf(w, ", now %s", v.display())
		}
		fmt.Fprintln(w)
	}
}

// urlProblem says what is wrong with a URL setting, or "" when nothing
// is, without quoting any of it: a malformed URL is exactly the one the
// password masking cannot find (bob:secret@db:5432 parses as scheme
// "bob"), and the error lands in logs and terminals.
func urlProblem(v string, schemes []string) string {
	const hidden = " (the value is not shown: it may hold a password)"
	want := strings.Join(schemes, " or ")
	u, err := url.Parse(v)
	switch {
	case !strings.Contains(v, "://"):
		return fmt.Sprintf("is not a %s URL: it has no scheme:// (expected %s://host…)%s", want, schemes[0], hidden)
	case err != nil:
		return fmt.Sprintf("is not a %s URL: it cannot be parsed%s", want, hidden)
	case !slices.Contains(schemes, strings.ToLower(u.Scheme)):
		return fmt.Sprintf("its scheme is not %s%s", want, hidden)
	case u.Host == "":
		return fmt.Sprintf("is not a %s URL: it names no host (expected %s://host…)%s", want, schemes[0], hidden)
	}
	return ""
}

// validate checks what a single setting cannot check alone.
func (c *Config) validate() []error {
	var errs []error
	checkURL := func(env, v string, schemes ...string) {
		if v == "" {
			return
		}
		if problem := urlProblem(v, schemes); problem != "" {
			errs = append(errs, fmt.Errorf("%s: %s", env, problem))
		}
	}
	checkURL("DATABASE_URL", c.DatabaseURL, "postgres", "postgresql")
	checkURL("REDIS_URL", c.RedisURL, "redis", "rediss")
	if c.RedisURL != "" && urlProblem(c.RedisURL, []string{"redis", "rediss"}) == "" {
		if _, err := redisstore.ParseURL(c.RedisMode, c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("REDIS_URL: with BOBNET_REDIS_MODE=%s: %w", c.RedisMode, err))
		}
	}
	if c.RedisStreams == 0 {
		c.RedisStreams = redisstore.DefaultStreams(c.RedisMode)
	}
	checkURL("BOBNET_PUBLIC_URL", c.PublicURL, "http", "https")
	checkURL("OPENAI_BASE_URL", c.OpenAIBaseURL, "http", "https")
	checkURL("SLACK_API_URL", c.SlackAPIURL, "http", "https")
	checkURL("MATRIX_HOMESERVER", c.MatrixHomeserver, "http", "https")

	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		errs = append(errs, fmt.Errorf("BOBNET_LISTEN: %q is not host:port", c.Listen))
	} else if c.APIToken == "" && !IsLoopback(host) {
		errs = append(errs, fmt.Errorf("BOBNET_LISTEN: %q is not a loopback address and BOBNET_API_TOKEN is not set; set a token to serve beyond this machine", c.Listen))
	}
	if c.TestClock != "" && (err != nil || !IsLoopback(host)) {
		errs = append(errs, fmt.Errorf("BOBNET_TEST_CLOCK: a test clock is for tests only, and BOBNET_LISTEN %q is not a loopback address; unset it", c.Listen))
	}
	if c.AdminListen != "" && sameListener(c.Listen, c.AdminListen) {
		errs = append(errs, fmt.Errorf("BOBNET_ADMIN_LISTEN: %q takes the port of BOBNET_LISTEN (%q); the admin listener needs an address of its own", c.AdminListen, c.Listen))
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Listen
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")

	errs = append(errs, c.validateSlackOAuth()...)
	// Slack: HTTP mode needs the signing secret, Socket Mode the app token;
	// either way a bot token to post with.
	if !c.slackOAuth() && (c.SlackBotToken != "" || c.SlackSigningSecret != "" || c.SlackAppToken != "") {
		if c.SlackBotToken == "" {
			errs = append(errs, errors.New("SLACK_BOT_TOKEN: required when SLACK_SIGNING_SECRET or SLACK_APP_TOKEN is set"))
		}
		if c.SlackSigningSecret == "" && c.SlackAppToken == "" {
			errs = append(errs, errors.New("SLACK_SIGNING_SECRET: required for Slack's HTTP mode (or set SLACK_APP_TOKEN for Socket Mode)"))
		}
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
		errs = append(errs, errors.New("SLACK_APP_TOKEN: an app-level token starts with xapp-"))
	}
	// A short hook secret is refused at start, not found out by whoever
	// guesses it: signing.CheckSecret says why, never what it is.
	for _, name := range slices.Sorted(maps.Keys(c.HookSecrets)) {
		if err := signing.CheckSecret(c.HookSecrets[name]); err != nil {
			errs = append(errs, fmt.Errorf("BOBNET_HOOK_SECRETS: hook %q: %w", name, err))
		}
	}
	if c.MatrixHomeserver != "" || c.MatrixUserID != "" {
		if c.MatrixHomeserver == "" || c.MatrixUserID == "" {
			errs = append(errs, errors.New("MATRIX_HOMESERVER and MATRIX_USER_ID: set both or neither"))
		}
		if c.MatrixAccessToken == "" && c.MatrixPassword == "" {
			errs = append(errs, errors.New("MATRIX_ACCESS_TOKEN: required (or MATRIX_PASSWORD) when Matrix is configured"))
		}
		if _, server, ok := strings.Cut(c.MatrixUserID, ":"); c.MatrixUserID != "" && (!strings.HasPrefix(c.MatrixUserID, "@") || !ok || server == "") {
			errs = append(errs, fmt.Errorf("MATRIX_USER_ID: %q is not a user id like @bobnet:example.org", c.MatrixUserID))
		}
		for _, r := range c.MatrixAllowedRooms {
			if !strings.HasPrefix(r, "!") || !strings.Contains(r, ":") {
				errs = append(errs, fmt.Errorf("MATRIX_ALLOWED_ROOMS: %q is not a room id like !abc:example.org", r))
			}
		}
	}
	return errs
}

// RequireServices reports the variables a command needs but lacks.
func (c *Config) RequireServices(needRedis bool) error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL: required (e.g. postgres://user@127.0.0.1:5432/bobnet)"))
	}
	if needRedis && c.RedisURL == "" {
		errs = append(errs, errors.New("REDIS_URL: required (e.g. redis://127.0.0.1:6379/0)"))
	}
	return newConfigError(errs)
}

// sameListener reports whether two host:port addresses would take the
// same port: the same port on the same host, or on any host when either
// listens on every address.
func sameListener(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	every := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "" || ip != nil && ip.IsUnspecified()
	}
	return strings.EqualFold(ha, hb) || every(ha) || every(hb)
}

// IsLoopback reports whether host names this machine only (localhost or a
// loopback address).
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
