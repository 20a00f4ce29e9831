package redisstore

// Key is one family of Redis keys this package writes: its pattern after
// the deployment's prefix (BOBNET_REDIS_PREFIX and a colon), its hash tag
// (what decides its Redis Cluster slot), what its keys hold and how long
// they live. Keys is the one list of them;
// docs/architecture.md's Redis table is rendered from it, and a test
// fails when the store writes a key no pattern here matches.
type Key struct {
	// Pattern is the key after the prefix; each <name> stands for a
	// variable part of one or more characters.
	Pattern string
	// Tag says what the key's hash tag (the part in braces) is, in
	// Markdown; a key without one is alone in every script and
	// transaction it is in.
	Tag string
	// Holds says what the key holds, in Markdown.
	Holds string
	// Lifetime says how long the key lives, in Markdown.
	Lifetime string
}

// Keys lists every Redis key pattern the store and the queue write, by
// family: proposals, claims, intake, queue, threads and marks.
var Keys = []Key{
	{"proposal:{<id>}", "the proposal id", "a proposal as JSON, as it was proposed",
		"until it expires (the TTL), then a little longer for late clicks"},
	{"decision:{<id>}", "the proposal id", "how it was decided: state, by whom, when, the board; laid over `proposal:{<id>}` when read, so a decision never rewrites the whole plan",
		"as `proposal:{<id>}`"},
	{"preview:{<id>}", "the proposal id", "the chat message the preview was posted as",
		"as `proposal:{<id>}`"},
	{"preview-missed:{<id>}", "the proposal id", "the note that a redraw came before the preview's post returned, so the poster redraws it (exactly one side does)",
		"as `proposal:{<id>}`"},
	{"expiries", "none (one key)", "sorted set of pending proposals by expiry time, swept every few seconds",
		"until decided or expired"},
	{"reminders", "none (one key)", "sorted set of pending proposals by the time they remind their deciders (three quarters of their TTL), swept with `expiries` ([policies](policies.md#reminders))",
		"until reminded or decided"},
	{"reminded:{<id>}", "the proposal id", "the once-mark (`SET NX`) that lets one replica send a proposal's reminder",
		"the proposal's remaining life"},
	{"claim:{<id>}", "the proposal id", "who is deciding a proposal right now (a token, the action and the user); only its holder releases or renews it",
		"`ClaimTTL` (10 s), renewed while its decision works; by then a decided proposal's own state refuses later decisions"},
	{"request:<id>", "none (one key)", "a request, its state, its planned answer and reply",
		"7 days"},
	{"dedupe:{<shard>}:<channel>:<key>", "the channel's stream shard", "on a Redis Cluster, platform event and webhook delivery ids already queued, and the request each started (on one server a request with a dedupe key has its id derived from the key, and its record is the mark; marks written there by older versions are read for an hour after an upgrade, `derived-ids-since`)",
		"7 days, as the request"},
	{"derived-ids-since", "none (one key)", "on one server, when the first replica that derives request ids from dedupe keys started (0 on a Redis no older version used), so admission reads the dedupe marks of older versions for an hour after it",
		"for good"},
	{"rate:{<user>}:<window>", "the user", "a user's request count, across channels",
		"one window"},
	{"rate:{<shard>}:<channel>:<window>", "the channel's stream shard", "a channel's request count",
		"one window"},
	{"rate:<who>:<window>", "none (one key)", "board events per board, run waits per run",
		"one window"},
	{"notice:{<shard>}:<user>:<channel>:<window>", "the channel's stream shard", "that a throttled person was told so in this window",
		"one window"},
	{"notices:{<shard>}:<channel>:<window>", "the channel's stream shard", "how many throttled people a channel's window told (by default at most 5)",
		"one window"},
	{"requests:{<shard>}", "the shard (`0` to `BOBNET_REDIS_STREAMS`−1; a channel's shard is a hash of the channel)", "a shard of the request stream and its consumer group `engine`; one blocking reader per shard and replica hands its entries to the workers",
		"an entry until its request is answered: the worker acknowledges and deletes it together"},
	{"draft:{r:<id>}", "the request id", "the chat message a request's draft was posted as, and what it became (a preview, a reply), so whichever replica answers turns that message into the answer",
		"7 days, as the request"},
	{"run-progress:<run>", "none (one key)", "the chat message that shows a run's cards moving, so every replica edits the same one",
		"7 days"},
	{"streams", "none (one key)", "the most stream shards any replica has used, so that a replica with fewer drains the others",
		"for good"},
	{"requests", "none (one key)", "the one request stream of BobNet before shards: drained by upgraded replicas, then deleted",
		"until drained"},
	{"thread:<thread>", "none (one key)", "the last 20 turns of a thread, for the prompt",
		"7 days, a bounded list"},
	{"seen:<key>", "none (one key)", "platform events, Slack slash commands and OAuth states already handled, help replies given, rooms told the bot cannot read them",
		"from a minute (help replies) to 7 days (unreadable rooms)"},
	{"mark:<key>", "none (one key)", "threads the bot posted in, so plain replies there are requests",
		"30 days"},
	{"home-viewers:<surface>", "none (one key)", "who opened BobNet's Slack App Home lately, by when, so a change refreshes the Homes it shows in ([slack.md](slack.md#plan-this-and-the-app-home))",
		"7 days, at most 1,000 people"},
	{"showing:{r:<id>}", "the request id", "how a chat surface shows a request while it is planned: the thread status it set, the placeholder or streamed draft message its answer replaces, that the answer went out ([slack.md](slack.md#while-bobnet-plans))",
		"1 hour"},
	{"due:<set>", "none (one key)", "work due later that any replica does, each piece by one at a time (taken for a lease, done when dropped): a look at a Slack thread for a draft left beside its answer, should the replica that answered die before its own look",
		"until due (a call's timeout, twice) and done"},
	{"stream-hold:<channel>:<thread>", "none (one key)", "the request whose draft a thread streams: one at a time, so an answer finds its stream in the thread though a replica died before recording it ([slack.md](slack.md#while-bobnet-plans))",
		"until the request is answered, at most 1 hour"},
}
