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

// command answers /bobnet; shared by HTTP and Socket Mode. trigger is the
// command's trigger id, unique per invocation: a replayed command carries
// the same one and is not run again. The grammar is bot's (bot.Verbs):
// here the command's mentions become person ids, and the answer Slack
// mrkdwn.
func (a *Adapter) command(ctx context.Context, channel, user, text, trigger string) commandReply {
	verb, args, rest := bot.ParseCommand(text)
	switch verb {
	case "assign":
		args = a.assignArgs(channel, args)
		if n := len(args); n >= 2 && strings.HasPrefix(args[n-1], "@") {
			return ephemeral("Slack sent me the name " + escape(args[n-1]) + ", not the person, so I can't tell who it is; nothing changed. " +
				"Ask whoever manages this Slack app to turn on *Escape channels, users, and links* for /bobnet (it is on in BobNet's manifest).")
		}
	case "plan":
		// Slack escapes the command's mentions (should_escape): they are
		// stripped as a mention's are, so both ask the same.
		rest = strings.TrimSpace(stripMentions(rest))
	}
	c := bot.Command{Dialect: bot.SlackDialect, Channel: board.Channel{Source: board.SourceSlack, ID: channel}, User: user,
		Verb: verb, Args: args, Text: rest, PublicURL: a.cfg.PublicURL, Logger: a.logger}
	if trigger != "" {
		c.Once = func(ctx context.Context) (bool, error) {
			return a.memory.SeenOnce(ctx, "slack-command:"+trigger, 24*time.Hour)
		}
	}
	ans := bot.Verbs.Answer(ctx, a.eng, c)
	if ans.Act == bot.ActPlan {
		return a.planCommand(ctx, channel, user, ans.Text, trigger)
	}
	return a.render(ctx, c, ans)
}

func ephemeral(text string) commandReply { return commandReply{ResponseType: "ephemeral", Text: text} }

// render is a command's answer in Slack: a change or a board's status
// for the channel, anything else only for the person who asked.
func (a *Adapter) render(ctx context.Context, c bot.Command, ans bot.CommandAnswer) commandReply {
	switch {
	case ans.Help:
		return ephemeral(helpText())
	case ans.Err != nil:
		return ephemeral(decisionText(ans.Err))
	case ans.Status != nil:
		st := ans.Status
		blocks := StatusBlocks(*st, board.BoardURL(a.cfg.PublicURL, st.Board.ID))
		if ans.RunsLine != "" {
			blocks = append(blocks, contextBlock(escape(ans.RunsLine)))
		}
		if ans.BudgetLine != "" {
			blocks = append(blocks, contextBlock(ans.BudgetLine))
		}
		return commandReply{ResponseType: "in_channel", Text: fallback("Status of " + st.Board.Name), Blocks: blocks}
	case ans.Next != nil:
		st := ans.Next
		return ephemeral(bot.NextTextAs(*st, escape, assigneeMention(board.TenantOf(st.Board.Channel))) + "\n<" + board.BoardURL(a.cfg.PublicURL, st.Board.ID) + "|Open the board>")
	case ans.Update != nil:
		up := *ans.Update
		who := assigneeMention(board.TenantOf(c.Channel.Key()))
		if len(up.Changes) == 0 {
			return ephemeral(bot.CardUpdateTextAs(up, "", escape, who))
		}
		a.cardChanged(ctx, up)
		return commandReply{ResponseType: "in_channel", Text: strings.TrimSuffix(bot.CardUpdateTextAs(up, "", escape, who), ".") + " by <@" + escape(c.User) + ">. <" +
			board.BoardURL(a.cfg.PublicURL, up.Board.ID) + "#" + string(up.Card.ID) + "|Open the board>"}
	case ans.Policy != nil:
		return ephemeral(PolicyText(*ans.Policy))
	case ans.Link.URL != "":
		return ephemeral(escape(ans.Text) + ". <" + ans.Link.URL + "|" + ans.Link.Label + ">")
	case ans.BudgetLine != "":
		return ephemeral(escape(ans.Text) + "\n" + ans.BudgetLine)
	}
	return ephemeral(escape(ans.Text))
}

// planCommand submits `/bobnet plan <what>`. A slash command has no
// message to thread on: the request is posted, after the ack, so the
// preview has a thread.
func (a *Adapter) planCommand(ctx context.Context, channel, user, req, trigger string) commandReply {
	if trigger == "" {
		return ephemeral("That command came without a trigger id, so I can't tell it from a replay; nothing was done.")
	}
	first, err := a.memory.SeenOnce(ctx, "slack-command:"+trigger, 24*time.Hour)
	if err != nil {
		return ephemeral(decisionText(fmt.Errorf("%w: %w", bot.ErrUnavailable, err)))
	}
	if !first {
		return ephemeral("Already on it.")
	}
	a.afterAck("slash plan", func(ctx context.Context) {
		api, id, err := a.web(ctx, channel)
		var ts string
		if err == nil {
			_, ts, err = api.PostMessageContext(ctx, id, slackapi.MsgOptionText(fmt.Sprintf("<@%s> asked BobNet: %s", escape(user), escape(req)), false))
		}
		if err != nil {
			a.logger.Warn("post slash-command request", "trigger", trigger, "err", err)
			a.ephemeral(ctx, channel, "", user, "I couldn't post in this channel; invite me first (`/invite @BobNet`).")
			return
		}
		t := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: channel}, ID: ts}
		if _, err := a.eng.Submit(ctx, board.Request{Thread: t, User: user, Text: req, DedupeKey: "slack-command:" + trigger}); err != nil && !errors.Is(err, bot.ErrRateLimited) {
			a.ephemeral(ctx, channel, ts, user, decisionText(err))
		}
	})
	return ephemeral("On it — the preview will appear in the thread.")
}
