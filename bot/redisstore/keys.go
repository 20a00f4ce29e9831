package redisstore

// Key is one family of Redis keys this package writes: its pattern after
// the deployment's prefix (BOBNET_REDIS_PREFIX and a colon), what its keys
// hold and how long they live. Keys is the one list of them;
// docs/architecture.md's Redis table is rendered from it, and a test
// fails when the store writes a key no pattern here matches.
type Key struct {
	// Pattern is the key after the prefix; each <name> stands for a
	// variable part of one or more characters.
	Pattern string
	// Holds says what the key holds, in Markdown.
	Holds string
	// Lifetime says how long the key lives, in Markdown.
	Lifetime string
}

// Keys lists every Redis key pattern the store and the queue write, by
// family: proposals, claims, intake, queue, threads and marks.
var Keys = []Key{
	{"proposal:<id>", "a proposal as JSON, as it was proposed",
		"until it expires (the TTL), then a little longer for late clicks"},
	{"decision:<id>", "how it was decided: state, by whom, when, the board; laid over `proposal:<id>` when read, so a decision never rewrites the whole plan",
		"as `proposal:<id>`"},
	{"preview:<id>", "the chat message the preview was posted as",
		"as `proposal:<id>`"},
	{"preview-missed:<id>", "the note that a redraw came before the preview's post returned, so the poster redraws it (exactly one side does)",
		"as `proposal:<id>`"},
	{"expiries", "sorted set of pending proposals by expiry time, swept every few seconds",
		"until decided or expired"},
	{"reminders", "sorted set of pending proposals by the time they remind their deciders (three quarters of their TTL), swept with `expiries` ([policies](policies.md#reminders))",
		"until reminded or decided"},
	{"reminded:<id>", "the once-mark (`SET NX`) that lets one replica send a proposal's reminder",
		"the proposal's remaining life"},
	{"claim:<id>", "who is deciding a proposal right now (a token, the action and the user); only its holder releases or renews it",
		"`ClaimTTL` (10 s), renewed while its decision works; by then a decided proposal's own state refuses later decisions"},
	{"request:<id>", "a request, its state, its planned answer and reply",
		"7 days"},
	{"dedupe:<channel>:<key>", "platform event and webhook delivery ids already queued, and the request each started",
		"7 days, as the request"},
	{"rate:<who>:<window>", "request counts per user and per channel, board events per board, run waits per run",
		"one window"},
	{"notice:<user>:<channel>:<window>", "that a throttled person was told so in this window",
		"one window"},
	{"notices:<channel>:<window>", "how many throttled people a channel's window told (by default at most 5)",
		"one window"},
	{"requests", "the request stream and its consumer group `engine`",
		"an entry until its request is answered: the worker acknowledges and deletes it together"},
	{"thread:<thread>", "the last 20 turns of a thread, for the prompt",
		"7 days, a bounded list"},
	{"seen:<key>", "platform events, Slack slash commands and OAuth states already handled, help replies given, rooms told the bot cannot read them",
		"from a minute (help replies) to 7 days (unreadable rooms)"},
	{"mark:<key>", "threads the bot posted in, so plain replies there are requests",
		"30 days"},
	{"home-viewers:<surface>", "who opened BobNet's Slack App Home lately, by when, so a change refreshes the Homes it shows in ([slack.md](slack.md#plan-this-and-the-app-home))",
		"7 days, at most 1,000 people"},
	{"showing:{r:<id>}", "how a chat surface shows a request while it is planned: the thread status it set, the placeholder or streamed draft message its answer replaces, that the answer went out ([slack.md](slack.md#while-bobnet-plans))",
		"1 hour"},
}
