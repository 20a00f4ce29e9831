package matrix

import (
	"context"
	"errors"
	"fmt"
	"html"
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

// first reports whether evt is seen for the first time, across replicas
// and restarts. When Redis cannot say, it acts: a double notice beats a
// lost decision.
func (a *Adapter) first(ctx context.Context, kind string, evt id.EventID) bool {
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
var replyFallback = regexp.MustCompile(`(?s)^(> [^\n]*\n)+\n?`)

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
	body := strings.TrimSpace(replyFallback.ReplaceAllString(c.Body, ""))
	// A command names the bot itself (!bobnet …): it is no mention.
	mentioned := !strings.HasPrefix(body, "!") && a.mentioned(c)
	text := body
	if mentioned {
		text = a.stripMention(body)
	}
	thread := bot.Thread{Channel: channel(room), ID: string(root)}

	if strings.HasPrefix(text, "!") {
		a.command(ctx, evt, thread, inThread, text)
		return
	}
	if !mentioned {
		if !inThread {
			return
		}
		ours, err := a.store.IsThread(ctx, room, root)
		if err != nil {
			a.logger.Warn("matrix: look up thread", "err", err)
			return
		}
		if !ours {
			return
		}
	}
	if text == "" || strings.EqualFold(text, "help") {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: helpText})
		return
	}
	a.submit(ctx, evt, thread, text)
}

func (a *Adapter) submit(ctx context.Context, evt *event.Event, thread bot.Thread, text string) {
	rid := bot.NewRequestID() // for the log: a request that fails to queue has no other id
	_, err := a.eng.Submit(ctx, bot.Request{
		ID: rid, Thread: thread, User: string(evt.Sender), Text: text, DedupeKey: "matrix:" + string(evt.ID),
		ReceivedAt: time.UnixMilli(evt.Timestamp),
	})
	switch {
	case err == nil, errors.Is(err, bot.ErrRateLimited):
	case ctx.Err() != nil:
		// The sync lease went away mid-batch: the next holder replays the
		// event, and the dedupe key keeps it to one request.
	default:
		a.logger.Warn("matrix: submit request", "request", rid, "event", evt.ID, "err", err)
		a.notice(thread, bot.Reply{Kind: bot.ReplyError, Text: decisionText(err)})
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
	return strings.TrimSpace(spaces.ReplaceAllString(re.ReplaceAllString(body, ""), " "))
}

// spaces is a run of blanks a removed mention leaves behind.
var spaces = regexp.MustCompile(`[ \t]{2,}`)

// command handles "!…": room commands (!bobnet …) and thread decisions.
func (a *Adapter) command(ctx context.Context, evt *event.Event, thread bot.Thread, inThread bool, text string) {
	fields := strings.Fields(text)
	verb := strings.ToLower(fields[0])
	rest := strings.TrimSpace(strings.TrimPrefix(text, fields[0]))
	user := string(evt.Sender)
	room := evt.RoomID
	if verb == "!bobnet" {
		sub := ""
		if len(fields) > 1 {
			sub = strings.ToLower(fields[1])
		}
		switch sub {
		case "plan":
			req := strings.TrimSpace(strings.TrimPrefix(rest, fields[1]))
			if strings.EqualFold(req, "this") {
				a.planThis(ctx, evt, thread, inThread) // planthis.go
				return
			}
			if req == "" {
				a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Say what to plan: !bobnet plan our product launch"})
				return
			}
			a.submit(ctx, evt, thread, req)
		case "status":
			if !a.first(ctx, "command", evt.ID) {
				return
			}
			arg := ""
			if len(fields) > 2 {
				arg = fields[2]
			}
			a.async(func(ctx context.Context) { a.status(ctx, thread, arg) })
		case "move", "assign", "next":
			if !a.first(ctx, "command", evt.ID) {
				return
			}
			args := fields[2:]
			a.async(func(ctx context.Context) { a.cardCommand(ctx, thread, sub, user, args) })
		case "run", "runs", "accept", "sendback", "schedule":
			if !a.first(ctx, "command", evt.ID) {
				return
			}
			args := fields[2:]
			a.async(func(ctx context.Context) { a.runCommand(ctx, thread, sub, user, args) })
		case "policy":
			if !a.first(ctx, "command", evt.ID) {
				return
			}
			a.async(func(ctx context.Context) { a.policyCommand(ctx, thread) })
		case "leave":
			if !a.first(ctx, "command", evt.ID) {
				return
			}
			a.async(func(ctx context.Context) {
				a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Bye! Invite me again whenever you need a plan."})
				a.leave(ctx, room, "asked by "+user)
			})
		default:
			a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: helpText})
		}
		return
	}
	var act string
	switch verb {
	case "!approve", "!cancel", "!revise", "!again", "!withdraw":
		act = verb[1:]
	default:
		return // another bot's command
	}
	if !inThread {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Use " + verb + " as a reply in the thread of a preview."})
		return
	}
	p, err := a.store.ThreadProposal(ctx, room, id.EventID(thread.ID))
	if errors.Is(err, ErrNotFound) {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "There is no proposal in this thread."})
		return
	}
	if err != nil {
		a.logger.Warn("matrix: find thread proposal", "room", room, "thread", thread.ID, "err", err)
		return
	}
	if act == "revise" && rest == "" {
		a.notice(thread, bot.Reply{Kind: bot.ReplyInfo, Text: "Say what to change: !revise make it weekly"})
		return
	}
	if !a.first(ctx, "command", evt.ID) {
		return
	}
	a.async(func(ctx context.Context) { a.decide(ctx, thread, act, p, user, rest) })
}

// decide runs one decision and tells the user when it was refused.
func (a *Adapter) decide(ctx context.Context, thread bot.Thread, act string, p bot.ProposalID, user, feedback string) {
	var err error
	switch act {
	case "approve":
		var ap bot.Approval
		ap, err = a.eng.Approve(ctx, p, user)
		if err == nil && ap.State == bot.ProposalPending && ap.Needed > 1 {
			// The edited preview shows the count to the room; the
			// approver hears that their approval counted.
			a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: fmt.Sprintf(
				"%s: your approval is recorded: %d of %d approvals. The board is created when the last one arrives.",
				user, len(ap.Approvals), ap.Needed)})
			return
		}
	case "cancel":
		_, err = a.eng.CancelWithReason(ctx, p, user, cancelReason(feedback)) // remind.go
	case "revise":
		_, err = a.eng.Revise(ctx, p, user, feedback)
	case "again":
		_, err = a.eng.ProposeAgain(ctx, p, user)
	case "withdraw":
		err = bot.ErrNothingToWithdraw
		if w, ok := a.eng.(withdrawer); ok {
			var wp bot.Proposal
			if wp, err = w.Withdraw(ctx, p, user); err == nil {
				a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: fmt.Sprintf(
					"%s: your approval is withdrawn: %d of %d approvals now.", user, len(wp.Quorum.Approvals), wp.Quorum.Needed)})
				return
			}
		}
	case "ask-feedback":
		if _, err = a.eng.Authorize(ctx, p, user); err == nil {
			a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: user + ": what should change? Reply in this thread with !revise <what to change>."})
			return
		}
	}
	if err == nil || errors.Is(err, bot.ErrRateLimited) {
		return
	}
	// One short notice per person and proposal, however often they try.
	if !a.first(ctx, "refused", id.EventID(string(p)+":"+user+":"+refusal(err))) {
		return
	}
	a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: user + ": " + decisionText(err)})
}

// refusal names the kind of a refused decision, so a later refusal of
// another kind (approved meanwhile) is still said.
func refusal(err error) string {
	var de *bot.DecidedError
	switch {
	case errors.As(err, &de):
		return "decided-" + string(de.State)
	case errors.Is(err, bot.ErrForbidden):
		return "forbidden"
	case errors.Is(err, bot.ErrExpired):
		return "expired"
	}
	return "other"
}

func (a *Adapter) onReaction(ctx context.Context, evt *event.Event) {
	if isOld(ctx, evt) || evt.Sender == a.cfg.UserID {
		return
	}
	rel := evt.Content.AsReaction().RelatesTo
	if rel.Type != event.RelAnnotation || a.reviewReaction(ctx, evt, rel) {
		return
	}
	var act string
	switch reactionKey(rel.Key) {
	case "✅", "✔", "👍":
		act = "approve"
	case "❌", "✖":
		act = "cancel"
	case "✏", "📝":
		act = "ask-feedback"
	case "🔁", "🔄":
		act = "again"
	default:
		return
	}
	p, err := a.store.PreviewProposal(ctx, evt.RoomID, rel.EventID)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			a.logger.Warn("matrix: find preview", "room", evt.RoomID, "event", rel.EventID, "err", err)
		}
		return
	}
	if !a.first(ctx, "reaction", evt.ID) {
		return
	}
	thread, err := a.previewThread(ctx, evt.RoomID, p)
	if err != nil {
		a.logger.Warn("matrix: find preview thread", "proposal", p, "err", err)
		return
	}
	user := string(evt.Sender)
	a.async(func(ctx context.Context) { a.decide(ctx, thread, act, p, user, "") })
}

// previewThread is the thread a proposal's preview is in.
func (a *Adapter) previewThread(ctx context.Context, room id.RoomID, p bot.ProposalID) (bot.Thread, error) {
	t, err := a.store.PreviewThread(ctx, room, p)
	if err != nil {
		return bot.Thread{}, err
	}
	return bot.Thread{Channel: channel(room), ID: string(t)}, nil
}

func (a *Adapter) status(ctx context.Context, thread bot.Thread, arg string) {
	var st board.Status
	var err error
	if arg == "" {
		st, err = a.eng.ChannelStatus(ctx, thread.Channel)
	} else {
		id, perr := board.ParseID(arg)
		if perr != nil {
			a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "That is not a board id; board ids look like b_ followed by 26 letters and digits."})
			return
		}
		st, err = a.eng.BoardStatus(ctx, id)
	}
	switch {
	case errors.Is(err, bot.ErrNotFound) && arg == "":
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "This room has no board yet. Mention me with what you want planned, and approve the preview."})
		return
	case errors.Is(err, bot.ErrNotFound):
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: "There is no board with that id. Board ids are long and exact: check that the whole id was copied."})
		return
	case err != nil:
		a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: decisionText(err)})
		return
	}
	msg := renderStatus(st, board.BoardURL(a.cfg.PublicURL, st.Board.ID))
	if line := a.eng.RunsLine(ctx, st.Board); line != "" {
		msg.Plain += "\n" + line
		msg.HTML += "<p>" + html.EscapeString(line) + "</p>"
	}
	if arg == "" {
		if line := a.budgetLine(ctx, thread.Channel); line != "" {
			msg.Plain += "\n" + line
			msg.HTML += "<p>" + line + "</p>"
		}
	}
	if _, err := a.send(ctx, thread, msg); err != nil {
		a.logger.Warn("matrix: post status", "board", st.Board.ID, "err", err)
	}
}

// decisionText is what a refused decision tells the person.
func decisionText(err error) string {
	var de *bot.DecidedError
	var pe *bot.PolicyError
	switch {
	case errors.As(err, &pe):
		return "you can't do that here: " + pe.Rule + "."
	case errors.As(err, &de) && de.By != "":
		return fmt.Sprintf("this proposal was already %s by %s.", de.State, de.By)
	case errors.As(err, &de):
		return fmt.Sprintf("this proposal was already %s.", de.State)
	case errors.Is(err, bot.ErrNothingToWithdraw):
		return "you have no approval of this proposal to withdraw."
	case errors.Is(err, bot.ErrForbidden):
		return "only the person who asked for this plan, a room moderator or an admin can decide it."
	case errors.Is(err, bot.ErrExpired):
		return "this proposal expired. Reply !again in this thread to propose it again."
	case errors.Is(err, bot.ErrNotFound):
		return "I can't find that proposal any more."
	case errors.Is(err, bot.ErrUnavailable):
		return "BobNet's database is unavailable right now; nothing was changed. Try again in a minute."
	}
	return "that did not work: " + err.Error()
}

// notice posts a reply off the sync loop.
func (a *Adapter) notice(thread bot.Thread, r bot.Reply) {
	a.async(func(ctx context.Context) { a.post(ctx, thread, r) })
}

func (a *Adapter) post(ctx context.Context, thread bot.Thread, r bot.Reply) {
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
		thread := bot.Thread{Channel: channel(evt.RoomID)}
		msg := renderReply(bot.Reply{Kind: bot.ReplyError, Text: text})
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
