package app

import (
	"flag"
	"fmt"
	"strings"
)

// whenWrong says, per variable, what an operator sees when it is missing or
// wrong, for docs/configuration.md. A variable without an entry gets the
// rule every setting follows.
var whenWrong = map[string]string{
	"DATABASE_URL":               "Required by `serve` and `migrate`. Missing or not a `postgres://` URL: BobNet does not start and says so. Unreachable at start: `serve` exits naming `DATABASE_URL`. Lost later: `/readyz` answers 503 naming postgres, approvals fail with a clear reply and nothing half-written; BobNet recovers without a restart when Postgres is back. For a primary with standbys, name every host with `target_session_attrs=read-write` (`postgres://user@pg-a:5432,pg-b:5432/bobnet?target_session_attrs=read-write`): BobNet connects to whichever is the primary and, after a failover, to the promoted one; an approval cut by the failover is retried once and still makes one board (see docs/operations.md). A `target_session_attrs` or `connect_timeout` pgx does not accept: `serve` exits naming `DATABASE_URL`.",
	"REDIS_URL":                  "Required by `serve`. Missing or not a `redis://`/`rediss://` URL: BobNet does not start. Unreachable at start: `serve` exits naming `REDIS_URL`. Lost later: `/readyz` answers 503 naming redis and new requests are refused as unavailable until it is back.",
	"BOBNET_REDIS_PREFIX":        "Two deployments sharing one Redis must use different prefixes, or they read each other's queue. Changing it orphans what is stored under the old one: pending proposals then read as expired.",
	"BOBNET_REDIS_MODE":          "Not `single`, `cluster` or `sentinel`: BobNet does not start. A `REDIS_URL` not in the mode's form (cluster: `redis://h1:p1?addr=h2:p2&addr=h3:p3`; sentinel: `redis://s1:26379?addr=s2:26379&master_name=NAME`, the master's password as `password=`): BobNet does not start, naming `REDIS_URL` and the mode. `single` pointed at a cluster node: requests whose keys live on another node are refused with Redis's MOVED, so set `cluster`. In `cluster` and `sentinel` modes a request is acknowledged only once a replica has it (docs/operations.md, Redis Cluster and Sentinel).",
	"BOBNET_REDIS_STREAMS":       "Outside 1..256: BobNet does not start. Every replica must use the same number. Lowered: the shards above it are still read until they are empty. Changed: a channel's dedupe marks and rate windows move with its shard, so a platform retry that straddles the change may be planned twice.",
	"BOBNET_LISTEN":              "Not `host:port`: BobNet does not start. An address beyond loopback without `BOBNET_API_TOKEN`: BobNet refuses to start. The port taken by another program: `serve` exits saying the address is already in use.",
	"BOBNET_ADMIN_LISTEN":        "Not `host:port` with a port from 1 to 65535, or the port of `BOBNET_LISTEN`: BobNet does not start. The port taken by another program: `serve` exits saying so. It answers `/metrics`, `/healthz` and `/readyz` without a token, and 404 for everything else (no API, no console, no Slack routes): keep it reachable from your monitoring only (in Kubernetes, the chart's admin port behind a ClusterIP Service). See docs/operations.md.",
	"BOBNET_PUBLIC_URL":          "Not an http(s) URL: BobNet does not start. Wrong but well-formed: board links posted in chat point at the wrong place.",
	"BOBNET_API_TOKEN":           "Unset: the REST API and `/metrics` need no token, so BobNet only listens on loopback. Clients with a different token get 401.",
	"BOBNET_PROPOSAL_TTL":        "Outside 1m..720h or not a duration: BobNet does not start.",
	"BOBNET_ADMINS":              "Unknown user ids are harmless: nobody by that id ever asks.",
	"BOBNET_PROFILES_DIR":        "A folder that cannot be read, or a profile with broken front matter: `serve` exits naming `BOBNET_PROFILES_DIR`.",
	"OPENAI_BASE_URL":            "Not an http(s) URL: BobNet does not start. Unreachable: BobNet starts anyway (it logs a warning) and answers each request with a reply naming `OPENAI_BASE_URL`; `/readyz` does not depend on the model.",
	"OPENAI_API_KEY":             "Wrong or missing where the server needs one: the model server refuses, and requests are answered with the same friendly error as an unreachable server.",
	"BOBNET_MODEL":               "A model the server does not serve: requests are answered with the model server's refusal as a friendly error.",
	"BOBNET_MODEL_STREAM":        "Anything but `auto`, `on` or `off`: BobNet does not start. `auto` asks for a stream and, where the server refuses a streamed request (404, 405, 406, 415, 501, or a 400/422 naming the stream), answers it with a plain answer or closes it without one event, asks that request again plainly and, once that works, every later one plainly until BobNet restarts (logged: \"model server does not answer streamed requests\"). A server that takes a streamed request and never answers it times out as any request does (`BOBNET_PLAN_TIMEOUT`). `on` against a server that does not stream: every request fails as an unreachable server does. `off`: plans appear only when finished, with no card-by-card draft.",
	"BOBNET_PLAN_TIMEOUT":        "Not a positive duration: BobNet does not start. Too short for the model: requests are answered \"the model took too long\".",
	"BOBNET_WORKERS":             "Outside 1..256: BobNet does not start. Too few for the load: requests wait longer in the queue (see `bobnet_queue_depth`). Each worker holds a Redis connection while it waits for a request, so the Redis client's pool is the workers plus 10 per core (a `pool_size` in `REDIS_URL` replaces it); the Postgres pool is the larger of 4 and the cores, plus one connection for every other worker (a `pool_max_conns` in `DATABASE_URL` replaces it).",
	"BOBNET_STREAMS_PER_CALLER":  "Outside 1..100000: BobNet does not start. Past it a caller's next stream is answered 429 (the board page tries again a few seconds later). Behind a proxy that hides viewers' addresses, every viewer without a token (the public board page) is one caller, the proxy: raise it to the viewers you expect per replica.",
	"BOBNET_STREAMS":             "Outside 1..100000: BobNet does not start. Past it new streams are answered 503 with Retry-After. Each open stream holds a goroutine and its buffers.",
	"SLACK_BOT_TOKEN":            "Set without `SLACK_SIGNING_SECRET` or `SLACK_APP_TOKEN` (or the other way round): BobNet does not start. Revoked or wrong: Slack refuses BobNet's messages, which is logged; nothing else breaks.",
	"SLACK_SIGNING_SECRET":       "Wrong: every request from Slack is refused with 401 and logged as a signature mismatch.",
	"SLACK_APP_TOKEN":            "Not starting with `xapp-`: BobNet does not start. Revoked: Socket Mode stops and the failure is logged.",
	"SLACK_CLIENT_ID":            "Set (or `SLACK_CLIENT_SECRET` set) without the other, `SLACK_SIGNING_SECRET` or `BOBNET_ENCRYPTION_KEY`, or beside `SLACK_BOT_TOKEN`: BobNet does not start, naming what is missing. Wrong: Slack refuses installs, and the callback page says nothing was installed. See docs/slack.md.",
	"SLACK_CLIENT_SECRET":        "As `SLACK_CLIENT_ID`. Changed in Slack (regenerated): installs and token renewals fail until it is updated here.",
	"BOBNET_ENCRYPTION_KEY":      "Not the base64 of 32 bytes: BobNet does not start. Changed without the old value in `BOBNET_ENCRYPTION_KEYS_OLD`: BobNet does not start, saying a Slack installation was sealed with another key. Lost: every workspace must install BobNet again.",
	"BOBNET_ENCRYPTION_KEYS_OLD": "A key that is not the base64 of 32 bytes: BobNet does not start, naming which. A row sealed under one of them never keeps BobNet from starting. Once every replica runs with the new key and a minute has passed, what the old ones sealed is sealed again and they may be removed (see docs/slack.md, Rotating the encryption key).",
	"MATRIX_HOMESERVER":          "Set without `MATRIX_USER_ID` (or the other way round), or without a token or password: BobNet does not start.",
	"BOBNET_HOOK_SECRETS":        "An item not of the form `name=secret`, or a secret with less than 16 bytes of key (for `whsec_`, the base64 after the prefix, decoded): BobNet does not start, naming the hook. A sender using another secret: its deliveries are refused with 401.",
	"BOBNET_CALLBACK_SECRET":     "Not `whsec_` followed by the base64 of 24 to 64 bytes: BobNet does not start. Unset while a hook or channel in `BOBNET_HOOKS_FILE` has callbacks, or equal to a hook's secret in `BOBNET_HOOK_SECRETS`: BobNet does not start, naming this variable. Changed: receivers checking with the old secret refuse the callbacks until they have the new one.",
	"BOBNET_TEST_CLOCK":          "For tests only (the soak moves schedules through daylight-saving changes with it); never set it in production. With `BOBNET_LISTEN` beyond loopback: BobNet does not start. A file that cannot be read or holds no RFC 3339 time: the scheduler keeps the last time it read (the real time before any) and logs a warning each look. Only the scheduler and the schedules API read it; leases, run deadlines and everything Postgres times stay on the real clock.",
	"BOBNET_USER_RATE":           "Not `N/period` with N ≥ 1 and a period from 1s to 24h: BobNet does not start. Too low: people are told to slow down.",
	"BOBNET_CHANNEL_RATE":        "As `BOBNET_USER_RATE`, per channel.",
	"BOBNET_LOG_FORMAT":          "Anything but `text` or `json`: BobNet does not start.",
	"BOBNET_LOG_LEVEL":           "Anything but `debug`, `info`, `warn` or `error`: BobNet does not start.",
	"BOBNET_ANY_MEMBER_DECIDES":  "Not `true` or `false`: BobNet does not start.",
}

// ConfigVar is one environment variable BobNet reads, and whether its
// value must be kept in a secret store (a secret, or a URL that may carry
// a password).
type ConfigVar struct {
	Env    string
	Secret bool
}

// ConfigVars lists every environment variable serve reads, in the order
// of the settings table (`bobnet config vars`).
func ConfigVars() []ConfigVar {
	vars := make([]ConfigVar, len(settings))
	for i, s := range settings {
		vars[i] = ConfigVar{Env: s.env, Secret: holdsSecret(s.env)}
	}
	return vars
}

// ConfigDoc is docs/configuration.md, made from the settings table so the
// reference cannot drift from what BobNet reads (a test compares them).
func ConfigDoc() string {
	var b strings.Builder
	b.WriteString(`# Configuration

<!-- Generated from the settings in app/config.go by
     go run ./cmd/bobnet config doc > docs/configuration.md
     A test fails when this file is out of date. -->

BobNet reads its settings from environment variables; each has a flag of the
same meaning that wins over the variable (` + "`bobnet serve -proposal-ttl 2h`" + `).
` + "`bobnet serve -h`" + ` lists them with the values in effect, showing secrets only
as ` + "`(set)`" + `. ` + "`bobnet config vars`" + ` prints the variable names, marking those that
belong in a secret store.

Every setting is checked when BobNet starts. Any problem — a missing required
variable or an invalid value — stops it before it serves anything, with one
line per problem naming the variable, for example:

    bobnet serve: invalid configuration:
      DATABASE_URL: required (e.g. postgres://user@127.0.0.1:5432/bobnet)
      BOBNET_PROPOSAL_TTL: not a duration like 24h or 30m: "tomorrow"

Passwords in URLs are masked in these messages and in the log. An adapter
(Slack, Matrix, webhooks) whose settings are all absent is simply off.

| variable | flag | type | default |
|---|---|---|---|
`)
	for i := range settings {
		s := &settings[i]
		typ := settingType(s)
		def := "—"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		if typ == "" {
			typ = "bool"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | `-%s` | %s | %s |\n", s.env, strings.ToLower(s.env), s.flag, typ, def)
	}
	for i := range settings {
		s := &settings[i]
		_, usage := flag.UnquoteUsage(&flag.Flag{Usage: s.usage})
		fmt.Fprintf(&b, "\n## %s\n\n%s.", s.env, upperFirst(usage))
		switch {
		case secretEnv(s.env):
			b.WriteString(" A secret: keep it in a secret store; BobNet never prints or logs it (`serve -h` shows `(set)`).")
		case holdsSecret(s.env):
			b.WriteString(" It may carry a password: keep it in a secret store; BobNet masks the password wherever it prints or logs the URL.")
		}
		b.WriteString("\n")
		if w, ok := whenWrong[s.env]; ok {
			fmt.Fprintf(&b, "\n%s\n", w)
		} else {
			b.WriteString("\nAn invalid value stops BobNet at start with a message naming the variable.\n")
		}
	}
	return b.String()
}

// settingType is the type serve -h shows for s: the first back-quoted word
// of its usage, "string" without one, "" for a boolean.
func settingType(s *setting) string {
	v := &settingValue{s: s, v: s.def}
	if v.IsBoolFlag() {
		return ""
	}
	typ, _ := flag.UnquoteUsage(&flag.Flag{Usage: s.usage, Value: v})
	if typ == "value" {
		typ = "string"
	}
	return typ
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
