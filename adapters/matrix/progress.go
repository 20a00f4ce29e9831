package matrix

import (
	"context"
	"fmt"

	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

var _ bot.RunShower = (*Adapter)(nil)

// RunProgress shows a run as one notice in the board's thread: posted
// when the run starts, edited (m.replace) as its cards move, at most once
// a second, and last edited when the run ends, with the edition link.
// The notice is recorded in Notes, so a replica that did not post it
// edits the same one.
func (a *Adapter) RunProgress(ctx context.Context, p bot.RunProgress) error {
	if p.Run.ID == "" {
		return fmt.Errorf("matrix run progress: no run")
	}
	msg := renderRunProgress(p)
	show := func(ctx context.Context, evt *id.EventID) error {
		if *evt == "" {
			ref, err := a.memory.RunProgressMessage(ctx, p.Run.ID)
			if err != nil {
				return fmt.Errorf("matrix run progress: %w", err)
			}
			*evt = id.EventID(ref)
		}
		if *evt != "" {
			return a.edit(ctx, p.Thread, *evt, msg)
		}
		posted, err := a.postNote(ctx, p.Thread, msg, func(ctx context.Context, ref board.MessageRef) (board.MessageRef, error) {
			return a.memory.ClaimRunProgressMessage(ctx, p.Run.ID, ref)
		})
		*evt = posted
		if err != nil {
			return fmt.Errorf("matrix run progress: %w", err)
		}
		return nil
	}
	key := "run:" + string(p.Run.ID)
	if p.Ended {
		return a.pace.final(ctx, key, show)
	}
	return a.pace.update(ctx, key, show)
}
