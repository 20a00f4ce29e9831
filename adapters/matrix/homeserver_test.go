package matrix_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// The tests here run against a real homeserver: `make test` starts a
// throwaway Dendrite (scripts/dendrite.sh) and sets MATRIX_TEST_HOMESERVER
// and MATRIX_TEST_SHARED_SECRET. The people in the rooms are mautrix
// clients too.

const publicURL = "http://bobnet.test"

// logger is silent unless MATRIX_TEST_LOG is set, for debugging a run.
func logger(t *testing.T) *slog.Logger {
	if os.Getenv("MATRIX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return storetest.Logger(t)
}

// homeserver returns the test homeserver, skipping when there is none.
func homeserver(t *testing.T) (url, secret string) {
	t.Helper()
	url, secret = os.Getenv("MATRIX_TEST_HOMESERVER"), os.Getenv("MATRIX_TEST_SHARED_SECRET")
	if url == "" {
		t.Skip("MATRIX_TEST_HOMESERVER is not set; `make test` starts a Dendrite and sets it")
	}
	return url, secret
}

func randomName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// user is one registered account.
type user struct {
	ID       id.UserID
	Password string
	cli      *mautrix.Client
}

// register creates an account with the shared-secret admin API (the HMAC
// nonce flow) and returns it logged in.
func register(t *testing.T, hs, secret, prefix string) *user {
	t.Helper()
	cli, err := mautrix.NewClient(hs, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, password := randomName(prefix), randomName("pw-")
	resp, err := (&synapseadmin.Client{Client: cli}).SharedSecretRegister(ctx, secret, synapseadmin.ReqSharedSecretRegister{Username: name, Password: password})
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	cli.UserID, cli.AccessToken, cli.DeviceID = resp.UserID, resp.AccessToken, resp.DeviceID
	return &user{ID: resp.UserID, Password: password, cli: cli}
}

func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// world is an engine with real Postgres, Redis and the scripted model, a
// bot account, and two people: alice asks, carol watches.
type world struct {
	t      *testing.T
	hs     string
	env    *bottest.Env
	bot    *user
	alice  *user
	carol  *user
	room   id.RoomID
	lease  string
	decode func(*event.Event) *event.Event // decrypts in encrypted rooms
	// encrypt turns on the bot's end-to-end encryption.
	encrypt bool
}

func newWorld(t *testing.T, opts ...bottest.Option) *world {
	t.Helper()
	hs, secret := homeserver(t)
	env := bottest.New(t, opts...)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if strings.Contains(plannertest.LastUserMessage(req), "weekly") {
			return plannertest.Reply{Content: strings.ReplaceAll(plan, "Daily", "Weekly")}
		}
		return plannertest.Reply{Content: plan}
	})
	w := &world{t: t, hs: hs, env: env, lease: env.Prefix + ":matrix-sync-lease", decode: func(e *event.Event) *event.Event { return e }}
	w.bot = register(t, hs, secret, "bobnet-")
	if err := w.bot.cli.SetDisplayName(ctx30(t), "BobNet"); err != nil {
		t.Fatal(err)
	}
	w.alice = register(t, hs, secret, "alice-")
	w.carol = register(t, hs, secret, "carol-")
	return w
}

// replica is one running adapter.
type replica struct {
	ad   *matrix.Adapter
	stop func()
}

// leaseFunc wraps the Redis lease, e.g. to make a replica die without
// giving it back.
type leaseFunc func(matrix.Lease) matrix.Lease

// start runs an adapter for the bot with its password, as `bobnet serve`
// would, and registers it as the engine's Matrix poster.
func (w *world) start(wrap ...leaseFunc) *replica {
	t := w.t
	t.Helper()
	var lease matrix.Lease = matrix.NewRedisLease(w.env.Redis, w.lease, 1500*time.Millisecond)
	for _, f := range wrap {
		lease = f(lease)
	}
	cfg := matrix.Config{
		Homeserver: w.hs, UserID: w.bot.ID, Password: w.bot.Password, PublicURL: publicURL,
		LeaseTTL: 1500 * time.Millisecond, CallTimeout: 20 * time.Second,
	}
	if w.encrypt {
		cfg.Encryption = &matrix.Encryption{DatabaseURL: w.env.Store.Pool().Config().ConnString(), PickleKey: "test-pickle-key"}
	}
	ad, err := matrix.New(ctx30(t), cfg, w.env.Engine, w.env.Store, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), lease, logger(t))
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.Register(board.SourceMatrix, bot.Registration{Poster: ad, Reminders: ad, PowerLevels: ad, Drafts: ad, Runs: ad})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ad.Run(ctx)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			ad.Close()
		})
	}
	t.Cleanup(stop)
	return &replica{ad: ad, stop: stop}
}

// openRoom has alice create a room, invite carol and the bot, and waits
// until both joined.
func (w *world) openRoom(extra ...event.Event) {
	t := w.t
	t.Helper()
	var state []*event.Event
	for i := range extra {
		state = append(state, &extra[i])
	}
	resp, err := w.alice.cli.CreateRoom(ctx30(t), &mautrix.ReqCreateRoom{
		Preset: "private_chat", Name: "newsroom", Invite: []id.UserID{w.carol.ID, w.bot.ID}, InitialState: state,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.room = resp.RoomID
	if _, err := w.carol.cli.JoinRoomByID(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	w.waitJoined(w.bot.ID)
}

func (w *world) waitJoined(who id.UserID) {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := w.alice.cli.JoinedMembers(ctx30(t), w.room)
		if err == nil {
			if _, ok := resp.Joined[who]; ok {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never joined %s", who, w.room)
}

// say sends a text message as u; thread roots it in a thread when set.
func (w *world) say(u *user, text string, thread id.EventID, mention bool) id.EventID {
	t := w.t
	t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text, Mentions: &event.Mentions{}}
	if mention {
		c.Mentions.UserIDs = []id.UserID{w.bot.ID}
	}
	if thread != "" {
		c.RelatesTo = (&event.RelatesTo{}).SetThread(thread, thread)
	}
	resp, err := u.cli.SendMessageEvent(ctx30(t), w.room, event.EventMessage, c)
	if err != nil {
		t.Fatal(err)
	}
	return resp.EventID
}

func (w *world) react(u *user, target id.EventID, key string) {
	w.t.Helper()
	if _, err := u.cli.SendReaction(ctx30(w.t), w.room, target, key); err != nil {
		w.t.Fatal(err)
	}
}

// events returns the room's recent events as alice sees them, oldest
// first, decrypted where needed. Each edit (m.replace) of a message is
// followed by a version of that message as the edit leaves it: the
// original's id, sender and relations with the edit's new content (and
// the edit's encryption), so a preview drawn by editing a draft is found
// as the event people react to, as clients show it.
func (w *world) events() []*event.Event {
	var out []*event.Event
	byID := map[id.EventID]*event.Event{}
	for _, e := range w.rawEvents() {
		out = append(out, e)
		byID[e.ID] = e
		m, ok := e.Content.Parsed.(*event.MessageEventContent)
		if !ok || m.RelatesTo == nil || m.RelatesTo.Type != event.RelReplace || m.NewContent == nil {
			continue
		}
		orig, ok := byID[m.RelatesTo.EventID]
		if !ok || orig.Sender != e.Sender {
			continue
		}
		om, ok := orig.Content.Parsed.(*event.MessageEventContent)
		if !ok {
			continue
		}
		nc := *m.NewContent
		nc.RelatesTo = om.RelatesTo
		v := *orig
		v.Content = event.Content{Parsed: &nc}
		v.Mautrix.WasEncrypted = e.Mautrix.WasEncrypted
		out = append(out, &v)
	}
	return out
}

// rawEvents are the room's events as the homeserver sends them, oldest
// first, decrypted where needed.
func (w *world) rawEvents() []*event.Event {
	t := w.t
	t.Helper()
	resp, err := w.alice.cli.Messages(ctx30(t), w.room, "", "", mautrix.DirectionBackward, nil, 500)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*event.Event, 0, len(resp.Chunk))
	for i := len(resp.Chunk) - 1; i >= 0; i-- {
		e := resp.Chunk[i]
		e.RoomID = w.room
		e = w.decode(e)
		_ = e.Content.ParseRaw(e.Type)
		out = append(out, e)
	}
	return out
}

// waitFor polls the room until match finds an event.
func (w *world) waitFor(what string, match func(*event.Event) bool) *event.Event {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range w.events() {
			if match(e) {
				return e
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	var seen []string
	for _, e := range w.events() {
		seen = append(seen, e.Type.Type+" "+string(e.Sender)+": "+bodyOf(e))
	}
	t.Fatalf("no %s; room has:\n%s", what, strings.Join(seen, "\n"))
	return nil
}

func (w *world) count(match func(*event.Event) bool) int {
	n := 0
	for _, e := range w.events() {
		if match(e) {
			n++
		}
	}
	return n
}

func bodyOf(e *event.Event) string {
	if m, ok := e.Content.Parsed.(*event.MessageEventContent); ok {
		return m.Body
	}
	if r, ok := e.Content.Parsed.(*event.ReactionEventContent); ok {
		return "reaction " + r.RelatesTo.Key
	}
	return ""
}

// fromBot matches the bot's messages (not edits) in thread containing text.
func (w *world) fromBot(thread id.EventID, text string) func(*event.Event) bool {
	return func(e *event.Event) bool {
		m, ok := e.Content.Parsed.(*event.MessageEventContent)
		if !ok || e.Sender != w.bot.ID || e.Type != event.EventMessage || m.MsgType != event.MsgNotice {
			return false
		}
		if m.RelatesTo == nil || m.RelatesTo.Type != event.RelThread || m.RelatesTo.EventID != thread {
			return false
		}
		return strings.Contains(m.Body, text)
	}
}

// preview matches the bot's preview of version v in thread.
func (w *world) preview(thread id.EventID, v int) func(*event.Event) bool {
	f := w.fromBot(thread, "React ✅ to approve")
	return func(e *event.Event) bool {
		return f(e) && strings.Contains(e.Content.AsMessage().Body, " · v"+string(rune('0'+v))+" requested by")
	}
}

// edit matches the bot's edit of target whose new text contains text.
func (w *world) edit(target id.EventID, text string) func(*event.Event) bool {
	return func(e *event.Event) bool {
		m, ok := e.Content.Parsed.(*event.MessageEventContent)
		if !ok || e.Sender != w.bot.ID || m.RelatesTo == nil || m.RelatesTo.Type != event.RelReplace || m.RelatesTo.EventID != target {
			return false
		}
		return m.NewContent != nil && strings.Contains(m.NewContent.Body, text)
	}
}
