package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// commandPrefix starts a console message that is a chat command, as in
// Slack: "/bobnet status", "/bobnet move NEWS-3 done". The grammar is
// bot's (bot.Verbs); the answer is a reply in the channel's stream.
const commandPrefix = "/bobnet"

// consoleCommand reports whether text is a chat command ("/bobnet" alone
// or followed by a space) and returns the words after the prefix.
func consoleCommand(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, commandPrefix)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// postCommand answers a command said in a console channel: the message
// is shown, then the answer as a reply. A plan is submitted as a message
// with what to plan is; nothing else goes through the planner.
func (c *Chat) postCommand(w http.ResponseWriter, r *http.Request, ch board.Channel, user, text, words string) {
	verb, args, rest := bot.ParseCommand(words)
	if v, ok := bot.Verbs.Lookup(verb, false); ok && !tokenMay(r, effectScope(v.Effect)) {
		httpjson.Error(w, http.StatusForbidden, fmt.Sprintf("%s %s needs a token with the %s scope; nothing was done", commandPrefix, v.Name, effectScope(v.Effect)))
		return
	}
	if v, ok := bot.Verbs.Lookup(verb, false); ok && limited(r) && v.Names != 0 && len(args) > 0 {
		// The grammar looks names up within the tenant (every console
		// channel's boards): a token limited to channels may use only
		// the commands about this channel's own board.
		httpjson.Error(w, http.StatusForbidden, fmt.Sprintf("a token limited to channels cannot name a board or card in %s %s; use the API routes, which check the board's channel", commandPrefix, v.Name))
		return
	}
	cmd := bot.Command{Dialect: bot.ConsoleDialect, Channel: ch, User: user, Verb: verb, Args: args, Text: rest, Logger: c.logger}
	ans := c.eng.Command(r.Context(), cmd)
	if ans.Act == bot.ActPlan {
		c.submit(w, r, ch, user, text, ans.Text)
		return
	}
	c.channels.Publish(ch.ID, "message", map[string]any{"user": user, "text": text})
	reply := commandReply(cmd, ans)
	c.channels.Publish(ch.ID, "reply", reply)
	httpjson.Write(w, http.StatusOK, map[string]any{"reply": reply})
}

// effectScope is the token scope a command needs: the scope of the API
// route that does the same.
func effectScope(e bot.Effect) apitoken.Scope {
	switch e {
	case bot.EffectPlan:
		return apitoken.ScopePropose
	case bot.EffectRead:
		return apitoken.ScopeRead
	case bot.EffectDecide:
		return apitoken.ScopeApprove
	}
	return apitoken.ScopeWrite
}

// tokenMay says whether the request's token has scope s; a request
// without a token (no API token configured) may.
func tokenMay(r *http.Request, s apitoken.Scope) bool {
	t, ok := apitoken.FromContext(r.Context())
	return !ok || t.Has(s)
}

// consoleHelp is what "/bobnet help" (or any word that is no verb)
// answers in the console.
func consoleHelp() string {
	return "BobNet turns a request into a board of cards you approve. Write what you want planned, or a command:\n" +
		bot.Verbs.Help(bot.ConsoleDialect) + "\n" +
		"• /bobnet help — shows this."
}

// commandReply is a command's answer as a console reply: plain text, and
// the board's link where there is one (the console serves the boards, so
// links are relative to it).
func commandReply(c bot.Command, ans bot.CommandAnswer) board.Reply {
	info := func(text string) board.Reply { return board.Reply{Kind: board.ReplyInfo, Text: text} }
	switch {
	case ans.Help:
		return info(consoleHelp())
	case ans.Err != nil:
		return board.Reply{Kind: board.ReplyError, Text: bot.Explain(ans.Err)}
	case ans.Status != nil:
		st := ans.Status
		var counts []string
		for _, s := range board.Statuses {
			counts = append(counts, fmt.Sprintf("%s %d", s, st.Counts[s]))
		}
		text := "Status of " + st.Board.Name + " (" + st.Board.Key + ")\n" + strings.Join(counts, " · ")
		for _, line := range []string{ans.RunsLine, ans.BudgetLine} {
			if line != "" {
				text += "\n" + line
			}
		}
		return board.Reply{Kind: board.ReplyInfo, Text: text, BoardURL: board.BoardURL(c.PublicURL, st.Board.ID)}
	case ans.Next != nil:
		return board.Reply{Kind: board.ReplyInfo, Text: bot.NextText(*ans.Next), BoardURL: board.BoardURL(c.PublicURL, ans.Next.Board.ID)}
	case ans.Update != nil && len(ans.Update.Changes) == 0:
		return info(bot.CardUpdateText(*ans.Update, ""))
	case ans.Update != nil:
		up := *ans.Update
		return board.Reply{Kind: board.ReplyInfo, Text: bot.CardUpdateText(up, c.User), BoardURL: board.BoardURL(c.PublicURL, up.Board.ID) + "#" + string(up.Card.ID)}
	case ans.Policy != nil:
		return info(bot.DescribePolicy(*ans.Policy))
	case ans.Link.URL != "":
		return info(ans.Text + ": " + ans.Link.URL)
	case ans.BudgetLine != "":
		return info(ans.Text + "\n" + ans.BudgetLine)
	}
	return info(ans.Text)
}
