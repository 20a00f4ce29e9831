package matrix

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// Everything here runs on the sync loop: it checks, hands the request to
// the engine (which only queues it) or hands the work to a goroutine, and
// returns. Nothing waits on the model or on a decision.

// seenTTL is how long event ids are remembered against redelivery.
const seenTTL = 24 * time.Hour

// firstSeen reports whether evt is seen for the first time, across replicas
// and restarts. When Redis cannot say, it acts: a double notice beats a
// lost decision.
func (a *Adapter) firstSeen(ctx context.Context, kind string, evt id.EventID) bool {
	ok, err := a.memory.SeenOnce(ctx, "matrix-"+kind+":"+string(evt), seenTTL)
	if ctx.Err() != nil {
		return false // the sync lease went away: the next holder replays it
	}
	if err != nil {
		a.logger.Warn("matrix: dedupe event", "event", evt, "err", err)
		return true
	}
	return ok
}

func (a *Adapter) onMember(ctx context.Context, evt *event.Event) {
	if isOld(ctx, evt) || evt.StateKey == nil {
		return
	}
	m := evt.Content.AsMember()
	target := id.UserID(*evt.StateKey)
	room := evt.RoomID
	switch {
	case target == a.cfg.UserID && m.Membership == event.MembershipInvite:
		if !a.allowedInvite(room, evt.Sender) {
			a.logger.Info("matrix: refusing invite", "room", room, "from", evt.Sender)
			a.async(func(ctx context.Context) {
				if err := a.call(ctx, "reject invite", func(ctx context.Context) error {
					_, err := a.cli.LeaveRoom(ctx, room, nil)
					return err
				}); err != nil {
					a.logger.Warn("matrix: reject invite", "room", room, "err", err)
				}
			})
			return
		}
		a.async(func(ctx context.Context) {
			if err := a.call(ctx, "join room", func(ctx context.Context) error {
				_, err := a.cli.JoinRoomByID(ctx, room)
				return err
			}); err != nil {
				a.logger.Warn("matrix: join room", "room", room, "err", err)
				return
			}
			a.logger.Info("matrix: joined room", "room", room, "invited_by", evt.Sender)
		})
	case target != a.cfg.UserID && evt.Mautrix.EventSource&event.SourceJoin != 0 &&
		(m.Membership == event.MembershipLeave || m.Membership == event.MembershipBan):
		// Left alone in a room: leave it too.
		a.async(func(ctx context.Context) {
			var n int
			if err := a.call(ctx, "joined members", func(ctx context.Context) error {
				resp, err := a.cli.JoinedMembers(ctx, room)
				if err == nil {
					n = len(resp.Joined)
				}
				return err
			}); err != nil || n > 1 {
				return
			}
			a.leave(ctx, room, "left alone")
		})
	}
}

func (a *Adapter) leave(ctx context.Context, room id.RoomID, why string) {
	if err := a.call(ctx, "leave room", func(ctx context.Context) error {
		_, err := a.cli.LeaveRoom(ctx, room, nil)
		return err
	}); err != nil {
		a.logger.Warn("matrix: leave room", "room", room, "err", err)
		return
	}
	a.logger.Info("matrix: left room", "room", room, "why", why)
}

// replyFallback is the quoted part of a reply's body that older clients
// put in front of the text.
var replyFallback = &lazy[*regexp.Regexp]{build: func() *regexp.Regexp { return regexp.MustCompile(`(?s)^(> [^\n]*\n)+\n?`) }}

func (a *Adapter) onMessage(ctx context.Context, evt *event.Event) {
	if isOld(ctx, evt) || evt.Sender == a.cfg.UserID {
		return
	}
	c := evt.Content.AsMessage()
	if c.MsgType != event.MsgText && c.MsgType != event.MsgEmote {
		return // notices are bots talking; media is not a request
	}
	rel := c.RelatesTo
	if rel != nil && rel.Type == event.RelReplace {
		return // an edit
	}
	room := evt.RoomID
	root := evt.ID
	inThread := false
	if rel != nil && rel.Type == event.RelThread && rel.EventID != "" {
		root, inThread = rel.EventID, true
	}
	body := strings.TrimSpace(replyFallback.get().ReplaceAllString(c.Body, ""))
	// A command names the bot itself (!bobnet …): it is no mention.
	mentioned := !strings.HasPrefix(body, "!") && a.mentioned(c)
	text := body
	if mentioned {
		text = a.stripMention(body)
	}
	thread := board.Thread{Channel: channel(room), ID: string(root)}

	if strings.HasPrefix(text, "!") {
		a.command(ctx, evt, thread, inThread, text)
		return
	}
	if !mentioned {
		if !inThread {
			return
		}
		ours, err := a.store.IsMatrixThread(ctx, string(room), string(root))
		if err != nil {
			a.logger.Warn("matrix: look up thread", "err", err)
			return
		}
		if !ours {
			return
		}
	}
	if text == "" || strings.EqualFold(text, "help") {
		a.notice(thread, board.Reply{Kind: board.ReplyInfo, Text: helpText()})
		return
	}
	a.submit(ctx, evt, thread, text)
}

func (a *Adapter) submit(ctx context.Context, evt *event.Event, thread board.Thread, text string) {
	_, err := a.eng.Submit(ctx, board.Request{
		Thread: thread, User: string(evt.Sender), Text: text, DedupeKey: "matrix:" + string(evt.ID),
		ReceivedAt: time.UnixMilli(evt.Timestamp),
	})
	switch {
	case err == nil, errors.Is(err, bot.ErrRateLimited):
	case ctx.Err() != nil:
		// The sync lease went away mid-batch: the next holder replays the
		// event, and the dedupe key keeps it to one request.
	default:
		a.logger.Warn("matrix: submit request", "event", evt.ID, "err", err)
		a.notice(thread, board.Reply{Kind: board.ReplyError, Text: decisionText(err)})
	}
}

// mentioned says whether a message addresses the bot: its user id in
// m.mentions, in the body or as a pill in the HTML, or its display name
// in the body.
func (a *Adapter) mentioned(c *event.MessageEventContent) bool {
	if c.Mentions != nil && c.Mentions.Has(a.cfg.UserID) {
		return true
	}
	lower := strings.ToLower(c.Body)
	if strings.Contains(lower, strings.ToLower(string(a.cfg.UserID))) {
		return true
	}
	if a.name != "" && nameMention(a.name).MatchString(c.Body) {
		return true
	}
	if c.FormattedBody != "" {
		pill := "matrix.to/#/" + string(a.cfg.UserID)
		escaped := strings.ToLower("matrix.to/#/" + url.QueryEscape(string(a.cfg.UserID)))
		if strings.Contains(c.FormattedBody, pill) || strings.Contains(strings.ToLower(c.FormattedBody), escaped) {
			return true
		}
	}
	return false
}

func nameMention(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^\pL\pN_])@?` + regexp.QuoteMeta(name) + `($|[^\pL\pN_])`)
}

// stripMention removes the bot's id or name (and a following ":" or ",")
// from a request's text.
func (a *Adapter) stripMention(body string) string {
	pats := []string{regexp.QuoteMeta(string(a.cfg.UserID))}
	if a.name != "" {
		pats = append(pats, `@?`+regexp.QuoteMeta(a.name))
	}
	re := regexp.MustCompile(`(?i)(` + strings.Join(pats, "|") + `)[:,]?`)
	return strings.TrimSpace(spaces.get().ReplaceAllString(re.ReplaceAllString(body, ""), " "))
}

// spaces is a run of blanks a removed mention leaves behind.
var spaces = &lazy[*regexp.Regexp]{build: func() *regexp.Regexp { return regexp.MustCompile(`[ \t]{2,}`) }}

// notice posts a reply off the sync loop.
func (a *Adapter) notice(thread board.Thread, r board.Reply) {
	a.async(func(ctx context.Context) { a.post(ctx, thread, r) })
}

func (a *Adapter) post(ctx context.Context, thread board.Thread, r board.Reply) {
	if err := a.Reply(ctx, thread, r); err != nil {
		a.logger.Warn("matrix: post notice", "room", thread.Channel.ID, "err", err)
	}
}

// cannotReadTTL is how long "I can't read this" is said only once per
// room.
const cannotReadTTL = 7 * 24 * time.Hour

// cannotRead tells a room, once, that BobNet could not read an encrypted
// message there. History from before BobNet started is not worth it. The
// notice goes in the clear: a client that withheld its room key from the
// bot (say, one sharing keys only with verified devices) would not be
// given the bot's key either, and could not read an encrypted notice. It
// holds no more than this fixed text.
func (a *Adapter) cannotRead(evt *event.Event, text string) {
	if evt.Sender == a.cfg.UserID || time.UnixMilli(evt.Timestamp).Before(a.started) {
		return
	}
	a.async(func(ctx context.Context) {
		first, err := a.memory.SeenOnce(ctx, "matrix-cannot-read:"+string(evt.RoomID), cannotReadTTL)
		if err != nil || !first {
			return
		}
		thread := board.Thread{Channel: channel(evt.RoomID)}
		msg := renderReply(board.Reply{Kind: board.ReplyError, Text: text})
		if _, err := a.send(ctx, thread, msg, mautrix.ReqSendEvent{DontEncrypt: true}); err != nil {
			a.logger.Warn("matrix: post notice", "room", evt.RoomID, "err", err)
		}
	})
}

// onEncryptedWithoutKeys answers encrypted messages when encryption is off.
func (a *Adapter) onEncryptedWithoutKeys(ctx context.Context, evt *event.Event) {
	if isOld(ctx, evt) {
		return
	}
	a.cannotRead(evt, "I can't read encrypted messages: end-to-end encryption is not turned on for me. "+
		"Ask whoever runs BobNet to set MATRIX_PICKLE_KEY (see “Add BobNet to Matrix”), or use an unencrypted room.")
}
