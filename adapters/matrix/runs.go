package matrix

import (
	"context"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/bot"
)

// runCommand answers `!bobnet run [KEY]` (start a run of the board, the
// room's by default; its news goes to the board's thread) and `!bobnet
// runs [KEY]` (its latest runs).
func (a *Adapter) runCommand(ctx context.Context, thread bot.Thread, sub, user string, args []string) {
	ref := ""
	if len(args) > 0 {
		ref = args[0]
	}
	info := func(text string) { a.post(ctx, thread, bot.Reply{Kind: bot.ReplyInfo, Text: text}) }
	if sub == "schedule" {
		c, err := bot.ParseScheduleCommand(args)
		if err != nil {
			info(strings.ReplaceAll(err.Error(), "`", ""))
			return
		}
		text, err := a.eng.Schedule(ctx, thread.Channel, user, c)
		if err != nil {
			info(bot.Explain(err))
			return
		}
		info(strings.ReplaceAll(text, "`", ""))
		return
	}
	if sub == "accept" || sub == "sendback" {
		accept := sub == "accept"
		if len(args) == 0 || (!accept && len(args) < 2) {
			info("Say which card, and when sending back, why: !bobnet accept NEWS-3, !bobnet sendback NEWS-3 cite the sources.")
			return
		}
		reason := ""
		if !accept {
			reason = strings.Join(args[1:], " ")
		}
		if _, err := a.eng.ReviewByHandle(ctx, thread.Channel, user, args[0], accept, reason); err != nil {
			info(bot.Explain(err))
		}
		return
	}
	if sub == "runs" {
		b, runs, err := a.eng.RecentRuns(ctx, thread.Channel, ref)
		if err != nil {
			info(bot.Explain(err))
			return
		}
		info(bot.RunsText(a.cfg.PublicURL, b, runs))
		return
	}
	r, err := a.eng.StartRun(ctx, thread.Channel, user, ref)
	if err != nil {
		info(bot.Explain(err))
		return
	}
	info(fmt.Sprintf("Run %d started; its news goes to the board's thread: %s", r.Number, bot.RunURL(a.cfg.PublicURL, r)))
}
