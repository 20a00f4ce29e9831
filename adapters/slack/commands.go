package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

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
		httpjson.Write(w, http.StatusOK, notInstalled)
		return
	}
	httpjson.Write(w, http.StatusOK, a.command(r.Context(), channel, form.Get("user_id"), form.Get("text"), form.Get("trigger_id")))
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
			st, err = a.eng.BoardStatusIn(ctx, bot.Channel{Source: bot.SourceSlack, ID: channel}, id)
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
		// Slack escapes the command's mentions (should_escape): they are
		// stripped as a mention's are, so both ask the same.
		req := strings.TrimSpace(stripMentions(strings.TrimPrefix(strings.TrimSpace(text), fields[0])))
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
		a.afterAck("slash plan", func(ctx context.Context) {
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
		return commandReply{ResponseType: "ephemeral", Text: helpText()}
	}
}
