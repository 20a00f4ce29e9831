package slack

import (
	"context"
	"fmt"
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
	if sub == "runs" {
		b, runs, err := a.eng.RecentRuns(ctx, ch, ref)
		if err != nil {
			return private(escape(bot.RunErrorText(err)))
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
		return private(escape(bot.RunErrorText(err)))
	}
	return private(fmt.Sprintf("Run %d started; its news goes to the board's thread. <%s|The run page>", r.Number, bot.RunURL(a.cfg.PublicURL, r)))
}
