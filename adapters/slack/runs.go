package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/bot"
)

// runCommand answers `/bobnet run [KEY]` (start a run of the board, the
// channel's by default) and `/bobnet runs [KEY]` (its latest runs). A
// started run is told in the board's thread; the answer here is only for
// the person who asked. A replayed command (same trigger id) starts
// nothing.
func (a *Adapter) runCommand(ctx context.Context, sub, channel, user, trigger string, args []string) commandReply {
	ch := bot.Channel{Source: bot.SourceSlack, ID: channel}
	private := func(text string) commandReply { return commandReply{ResponseType: "ephemeral", Text: text} }
	ref := ""
	if len(args) > 0 {
		ref = args[0]
	}
	switch sub {
	case "schedule":
		c, err := bot.ParseScheduleCommand(args)
		if err != nil {
			return private(escape(err.Error()))
		}
		text, err := a.eng.Schedule(ctx, ch, user, c)
		if err != nil {
			return private(escape(bot.Explain(err)))
		}
		return private(escape(text))
	case "accept", "sendback":
		return a.reviewCommand(ctx, sub == "accept", ch, user, args)
	case "runs":
		b, runs, err := a.eng.RecentRuns(ctx, ch, ref)
		if err != nil {
			return private(escape(bot.Explain(err)))
		}
		return private(escape(bot.RunsText(a.cfg.PublicURL, b, runs)))
	}
	if trigger != "" {
		first, err := a.memory.SeenOnce(ctx, "slack-command:"+trigger, 24*time.Hour)
		if err != nil {
			return private(decisionText(fmt.Errorf("%w: %w", bot.ErrUnavailable, err)))
		}
		if !first {
			return private("Already on it.")
		}
	}
	r, err := a.eng.StartRun(ctx, ch, user, ref)
	if err != nil {
		return private(escape(bot.Explain(err)))
	}
	return private(fmt.Sprintf("Run %d started; its news goes to the board's thread. <%s|The run page>", r.Number, bot.RunURL(a.cfg.PublicURL, r)))
}

// reviewCommand answers `/bobnet accept NEWS-3` and `/bobnet sendback
// NEWS-3 <reason>`: a review of a card in the running run of the
// channel's board, as the channel's policy allows. The thread is told.
func (a *Adapter) reviewCommand(ctx context.Context, accept bool, ch bot.Channel, user string, args []string) commandReply {
	private := func(text string) commandReply { return commandReply{ResponseType: "ephemeral", Text: text} }
	if len(args) == 0 || (!accept && len(args) < 2) {
		return private("Say which card, and when sending back, why: `/bobnet accept NEWS-3`, `/bobnet sendback NEWS-3 cite the sources`.")
	}
	reason := strings.Join(args[1:], " ")
	if accept {
		reason = ""
	}
	up, err := a.eng.ReviewByHandle(ctx, ch, user, args[0], accept, reason)
	if err != nil {
		return private(escape(bot.Explain(err)))
	}
	return private(escape(fmt.Sprintf("%s is now %s.", up.Card.Handle, up.Card.Status)))
}
