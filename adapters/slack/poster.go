package slack

import (
	"context"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
)

// Reply posts text in the thread, never broadcast to the channel.
func (a *Adapter) Reply(ctx context.Context, t board.Thread, r board.Reply) error {
	text := escape(r.Text)
	for _, q := range r.Questions {
		text += "\n• " + escape(q)
	}
	if r.BoardURL != "" {
		text += "\n<" + r.BoardURL + "|Open the board>"
	}
	if r.Kind == board.ReplyError || r.Kind == board.ReplySlowDown {
		text = ":warning: " + text
	}
	// Remembered before posting: a person may answer as soon as the
	// message shows.
	a.rememberThread(ctx, t)
	blocks := replyBlocks(text, r.Review)
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(fallback(r.Text), false), slackapi.MsgOptionBlocks(blocks...), slackapi.MsgOptionTS(t.ID)}
	lookAgain := false
	if r.Request != "" {
		// Named in its metadata, as a draft is: a streamed draft this
		// reply ends is then not taken for one still streaming.
		metadata := slackapi.SlackMetadata{EventType: answerEvent, EventPayload: map[string]any{"request_id": string(r.Request)}}
		opts = append(opts, slackapi.MsgOptionMetadata(metadata))
		drawn := func() []slackapi.Block { return blocks }
		_, done, again, err := a.answerDraft(ctx, r.Request, t, answer{
			text: fallback(r.Text), blocks: drawn, below: drawn, metadata: &metadata,
			settle: setAside,
		})
		if done {
			return err
		}
		lookAgain = again
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return err
	}
	_, ts, err := api.PostMessageContext(ctx, channel, opts...)
	if err == nil {
		a.answered(ctx, t, r.Request, ts, lookAgain)
	}
	return err
}

// setAside settles a streamed draft whose request was answered without a
// plan (a question, a refusal, an error): the draft's cards are shown as
// not kept.
func setAside(shown []string) []slackapi.StreamChunk {
	if len(shown) == 0 {
		return nil
	}
	chunks := []slackapi.StreamChunk{slackapi.NewPlanUpdateChunk("Draft set aside")}
	for _, id := range shown {
		c := slackapi.NewTaskUpdateChunk(id, "Not kept")
		c.Status, c.Details = slackapi.TaskCardStatusError, "This draft card is not part of an answer: see below."
		chunks = append(chunks, c)
	}
	return chunks
}

// UpdatePreview redraws a decided preview in place (chat.update).
func (a *Adapter) UpdatePreview(ctx context.Context, p board.Proposal) error {
	if p.Message == "" {
		return nil
	}
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return fmt.Errorf("update preview: %w", err)
	}
	err = a.unpaced(ctx, p.Thread.Channel.ID, func(ctx context.Context) error {
		_, _, _, err := api.UpdateMessageContext(ctx, channel, string(p.Message),
			slackapi.MsgOptionText(fallback("Proposal "+string(p.State)), false),
			slackapi.MsgOptionBlocks(updatedBlocks(p, a.cfg.PublicURL)...))
		return err
	})
	if err != nil {
		return fmt.Errorf("update preview: %w", err)
	}
	a.homeChanged(ctx, p)
	return nil
}

// Notify tells one person something only they see, in the thread.
func (a *Adapter) Notify(ctx context.Context, t board.Thread, user string, r board.Reply) error {
	text := escape(r.Text)
	if r.Kind == board.ReplyError || r.Kind == board.ReplySlowDown {
		text = ":warning: " + text
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if t.ID != "" {
		opts = append(opts, slackapi.MsgOptionTS(t.ID))
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return err
	}
	_, err = api.PostEphemeralContext(ctx, channel, user, opts...)
	return err
}

// ephemeral tells one user something only they see.
func (a *Adapter) ephemeral(ctx context.Context, channel, thread, user, text string) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(thread))
	}
	api, id, err := a.web(ctx, channel)
	if err == nil {
		_, err = api.PostEphemeralContext(ctx, id, user, opts...)
	}
	if err != nil {
		a.logger.Warn("post ephemeral", "err", err)
	}
}
