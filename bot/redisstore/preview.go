package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
)

// withPreview fills in the message a proposal's preview was posted as,
// kept under its own key (see SetPreviewMessage).
func withPreview(p *board.Proposal, ref any) {
	if s, ok := ref.(string); ok && s != "" && p.Message == "" {
		p.Message = board.MessageRef(s)
	}
}

// SetPreviewMessage records the message a proposal's preview was posted
// as, and reports whether a redraw missed it meanwhile (PreviewMessage
// found none): then the caller redraws. It has its own key rather than
// being a field written with the proposal, because the post and a
// decision race: a decision's write, made from a copy loaded before the
// post returned, must not erase the message, and the post must not put
// back the pending state a decision just replaced. Both steps are one
// script, so exactly one side redraws.
func (s *InFlight) SetPreviewMessage(ctx context.Context, id board.ProposalID, ref board.MessageRef, expires time.Time) (missed bool, err error) {
	n, err := setPreviewScript.Run(ctx, s.rdb, []string{s.pkey("preview", id), s.pkey("preview-missed", id)},
		string(ref), keepFor(expires).Milliseconds()).Int()
	return n == 1, wrap("set preview message", err)
}

// PreviewMessage returns the message a proposal's preview was posted as.
// When there is none yet it notes that a redraw missed it, so that
// SetPreviewMessage's caller redraws once the post returns.
func (s *InFlight) PreviewMessage(ctx context.Context, id board.ProposalID, expires time.Time) (board.MessageRef, error) {
	ref, err := previewScript.Run(ctx, s.rdb, []string{s.pkey("preview", id), s.pkey("preview-missed", id)},
		keepFor(expires).Milliseconds()).Text()
	return board.MessageRef(ref), wrap("get preview message", err)
}

// setPreviewScript (SetPreviewMessage) and previewScript (PreviewMessage)
// are the two sides of the race SetPreviewMessage describes.
var (
	setPreviewScript = redis.NewScript(setPreviewSource)
	previewScript    = redis.NewScript(previewSource)
)

var (
	//go:embed preview_set.lua
	setPreviewSource string
	//go:embed preview_get.lua
	previewSource string
)
