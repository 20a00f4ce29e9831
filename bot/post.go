package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// postAttempts is how many times an answer is tried in one delivery
// before the request is closed as failed to post.
const postAttempts = 3

// unavailableEvery is how often an answer's post is tried again while a
// store of BobNet's own is unavailable (for Config.UnavailableRetry).
const unavailableEvery = 500 * time.Millisecond

// MaxDeliveries is how many times a request is handed to a worker before
// it is given up on: a delivery that ends without an acknowledgement (a
// worker that died or stopped mid-post, a store that did not answer) is
// reclaimed and tried again, but not forever, so an answer is posted at
// most postAttempts × MaxDeliveries times.
const MaxDeliveries = 5

// bookkeepingTimeout bounds recording what was posted (where the preview
// went, the request's state, the acknowledgement). It is a context of its
// own, not what is left of the post's: a platform that answers just past
// the post timeout has posted, and that must be recorded, or the answer
// is posted again after a reclaim.
const bookkeepingTimeout = 10 * time.Second

// giveUp closes a request handed out more than MaxDeliveries times as
// failed, with a logged error, and acknowledges it.
func (e *Engine) giveUp(ctx context.Context, consumer string, d board.QueuedRequest, rec board.RequestRecord) {
	e.logger.Error("giving up on a request handed out too many times; it is closed as failed", "request", d.RequestID, "deliveries", d.Count, "max", MaxDeliveries)
	rec.Status.State = board.RequestFailed
	rec.Status.Error = strings.TrimSpace(rec.Status.Error + fmt.Sprintf(" (given up after %d attempts to answer)", d.Count-1))
	if rec.Answer != nil && rec.Answer.ProposalID != "" {
		rec.Status.ProposalID = rec.Answer.ProposalID
	}
	e.observeAnswer(rec.Request, rec.Status)
	if err := e.deps.Requests.PutRequest(ctx, rec); err != nil {
		e.logger.Warn("store request status", "request", d.RequestID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return
	}
	e.ack(ctx, consumer, d)
}

// post posts a planned answer, then marks the request done and
// acknowledges it: posting is part of answering. Each attempt has the post
// timeout of its own, and the bookkeeping after it its own too. made is
// the proposal this delivery just stored (nil: none, or stored before):
// the first attempt of a first delivery posts it as it is in hand, since
// no one else has had the request to post it; any other reads it back.
// stored waits until the planned answer is stored, before the request is
// recorded done.
func (e *Engine) post(ctx context.Context, consumer string, d board.QueuedRequest, rec board.RequestRecord, made *board.Proposal, stored func()) {
	base, done := e.out.detached(ctx)
	defer done()
	r, ans := rec.Request, rec.Answer
	poster := e.poster(r.Thread.Channel.Source)
	var err error
	claimed, waited := false, false
	var unavailableSince time.Time
	for attempt := 0; attempt < postAttempts; attempt++ {
		if attempt > 0 && !claimed {
			if e.out.stopping() {
				break
			}
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		pctx, cancel := context.WithTimeout(base, e.cfg.PostTimeout)
		// The recording around the post (its claim before, where it went
		// after) outlives a post that answers just before its timeout.
		book, bcancel := context.WithTimeout(base, e.cfg.PostTimeout+bookkeepingTimeout)
		// A second attempt, or a request handed out before, may follow
		// a post that went out unheard.
		var fresh *board.Proposal
		if attempt == 0 && d.Count <= 1 && !waited {
			fresh = made
		}
		err = e.postOnce(pctx, book, poster, r, ans, fresh, attempt > 0 || d.Count > 1 || waited, claimed)
		bcancel()
		cancel()
		if errors.Is(err, errPostingElsewhere) && !waited {
			// Once per delivery: a worker that took the claim and died
			// holds it for its whole life, longer than a few reclaims
			// take (BOBNET_RECLAIM_IDLE), and every reclaim counts
			// towards MaxDeliveries. The soak saw a request given up so.
			waited = true
			if claimed, err = e.awaitPosting(base, ans.ProposalID, postingHolder(r, e.cfg.ConsumerName)); err == nil {
				attempt-- // waiting was not an attempt
				continue
			}
		}
		claimed = false
		if err == nil || errors.Is(err, errPostingElsewhere) {
			break
		}
		// A store of BobNet's own unavailable (Redis failing over,
		// Postgres away) is not the platform refusing the answer: it is
		// tried again, without counting as an attempt, for as long as a
		// failover takes.
		if errors.Is(err, ErrUnavailable) && !e.out.stopping() {
			if unavailableSince.IsZero() {
				unavailableSince = time.Now()
			}
			if time.Since(unavailableSince) < e.cfg.UnavailableRetry {
				select {
				case <-time.After(unavailableEvery):
				case <-base.Done():
				}
				if base.Err() != nil {
					break
				}
				attempt--
				continue
			}
		}
	}
	if errors.Is(err, errPostingElsewhere) {
		// Another worker (this request was taken over from a slow one) is
		// posting the preview now, and records and acknowledges it; should
		// it die, the request comes back here once its claim has run out.
		e.logger.Info("preview being posted by another worker; leaving the request to it", "request", r.ID)
		e.leases.drop(consumer, d.MessageID)
		return
	}
	stored()
	bctx, cancel := context.WithTimeout(base, bookkeepingTimeout)
	defer cancel()
	if err != nil && e.out.stopping() {
		e.logger.Info("answer not posted before shutdown; leaving it for another replica", "request", r.ID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return
	}
	if errors.Is(err, ErrUnavailable) {
		// Still unavailable after UnavailableRetry: the request is not
		// closed as not posted, but left to be reclaimed and posted
		// again (up to MaxDeliveries).
		e.logger.Warn("answer not posted: a store is unavailable; leaving it to be reclaimed", "request", r.ID, "err", err)
		e.leases.drop(consumer, d.MessageID)
		return
	}
	rec.Status.State = board.RequestDone
	switch {
	case ans.ProposalID != "":
		rec.Status.ProposalID = ans.ProposalID
		rec.Status.Reply = ans.Reply
	case ans.Reply != nil:
		rec.Status.Reply = ans.Reply
	}
	if ans.Failure != "" {
		rec.Status.State, rec.Status.Error = board.RequestFailed, ans.Failure
	}
	if err != nil {
		e.logger.Warn("post answer", "request", r.ID, "err", err)
		rec.Status.Error = strings.TrimSpace(rec.Status.Error + " (the answer could not be posted to " + string(r.Thread.Channel.Source) + ")")
	}
	e.observeAnswer(r, rec.Status)
	if err := e.deps.Requests.PutRequest(bctx, rec); err != nil {
		e.logger.Warn("store request status", "request", r.ID, "err", err)
		e.leases.drop(consumer, d.MessageID) // not acked: posted again after a reclaim, up to MaxDeliveries
		return
	}
	if ans.ProposalID != "" {
		e.logger.Debug("request answered", "request", r.ID, "state", rec.Status.State, "proposal", ans.ProposalID)
	} else {
		e.logger.Debug("request answered", "request", r.ID, "state", rec.Status.State)
	}
	e.ack(bctx, consumer, d)
}

// postOnce posts an answer's preview or reply within ctx, and records
// what was posted within book, a context of its own. A preview whose
// message came back is posted, even when the platform also reported an
// error after sending it (an adapter's own bookkeeping): posting it again
// would show two previews. fresh, when set, is the proposal as just
// stored, in place of reading it back.
func (e *Engine) postOnce(ctx, book context.Context, poster Poster, r board.Request, ans *board.Answer, fresh *board.Proposal, reposting, claimed bool) error {
	if ans.ProposalID == "" {
		if ans.Reply == nil {
			return nil
		}
		if err := poster.Reply(ctx, r.Thread, *ans.Reply); err != nil {
			return err
		}
		e.remember(book, r, "assistant", ans.Reply.Text)
		return nil
	}
	var p board.Proposal
	if fresh != nil && fresh.ID == ans.ProposalID {
		p = *fresh
	} else {
		var err error
		if p, err = e.deps.Proposals.Proposal(book, ans.ProposalID); err != nil {
			return err
		}
	}
	if p.Message != "" {
		return nil // posted before a crash
	}
	p.Reposting = reposting
	// One worker posts a preview at a time: a request taken over from a
	// worker still posting it (slow chat API, late lease renewal) must not
	// be posted twice. The claim lives as long as a post and its
	// bookkeeping may take; it is given back when the post failed.
	// claimed: awaitPosting took it already.
	post, holder := postingClaim(p.ID), postingHolder(r, e.cfg.ConsumerName)
	if !claimed {
		mine, err := e.deps.Proposals.Claim(book, post, holder, e.postingClaimTTL())
		if err != nil {
			return err
		}
		if !mine {
			return errPostingElsewhere
		}
	}
	ref, err := poster.PostPreview(ctx, p)
	if ref == "" {
		defer func() { _ = e.deps.Proposals.Release(context.WithoutCancel(book), post, holder) }()
	}
	if ref == "" && err != nil {
		return err
	}
	if err != nil {
		e.logger.Warn("preview posted, with an error after it", "proposal", p.ID, "message", ref, "err", err)
	}
	if ref != "" {
		e.previewPosted(book, poster, p, ref)
	}
	e.remember(book, r, "assistant", fmt.Sprintf("(proposed %s v%d with %d cards)", p.ID, p.Version, p.Plan.Stats().Cards))
	return nil
}

// previewPosted records where p's preview went, and redraws it if a
// decision (or an approval of several) came in while it was being posted
// and found no message to redraw. The store tells which side redraws, so
// exactly one does.
func (e *Engine) previewPosted(ctx context.Context, poster Poster, p board.Proposal, ref board.MessageRef) {
	var missed bool
	err := retryWrite(ctx, func() error {
		var err error
		missed, err = e.deps.Proposals.SetPreviewMessage(ctx, p.ID, ref, p.ExpiresAt)
		return err
	})
	if err != nil {
		e.logger.Warn("store preview ref", "proposal", p.ID, "err", err)
		return
	}
	e.logger.Debug("preview posted", "proposal", p.ID, "message", ref)
	if !missed {
		return
	}
	now, err := e.deps.Proposals.Proposal(ctx, p.ID)
	if err != nil {
		e.logger.Warn("reread proposal after its preview", "proposal", p.ID, "err", err)
		return
	}
	now = e.committed(ctx, now)
	now.Message = ref
	if err := poster.UpdatePreview(ctx, e.withApprovals(ctx, now)); err != nil {
		e.logger.Warn("update preview decided while posted", "proposal", p.ID, "err", err)
	}
}

// updatePreview redraws p's preview. A decision taken while the preview
// was still being posted has no message yet: it is read again here, when
// the redraw runs, and when there is still none previewPosted redraws.
func (e *Engine) updatePreview(ctx context.Context, poster Poster, p board.Proposal) error {
	if p.Message == "" {
		ref, err := e.deps.Proposals.PreviewMessage(ctx, p.ID, p.ExpiresAt)
		if err != nil {
			return err
		}
		if ref == "" {
			return nil
		}
		p.Message = ref
	}
	return poster.UpdatePreview(ctx, p)
}

// errPostingElsewhere means another worker holds the preview's posting
// claim.
var errPostingElsewhere = errors.New("the preview is being posted by another worker")

// postingClaim names the claim on posting p's preview, beside (not
// instead of) the claim on deciding it.
func postingClaim(p board.ProposalID) board.ProposalID { return "post:" + p }

// postingHolder is who holds the posting claim for request r on consumer.
func postingHolder(r board.Request, consumer string) string { return string(r.ID) + "@" + consumer }

// postingClaimTTL is how long a posting claim lives: as long as a post and
// its bookkeeping may take.
func (e *Engine) postingClaimTTL() time.Duration { return e.cfg.PostTimeout + bookkeepingTimeout }

// awaitPosting waits while another worker holds the claim on posting
// preview id, until the preview is recorded as posted (false), the claim
// is free and taken for holder (true), or the claim's whole life has
// passed or the engine is stopping (errPostingElsewhere). The delivery's
// lease is renewed meanwhile, so the request is not handed out again.
func (e *Engine) awaitPosting(ctx context.Context, id board.ProposalID, holder string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.postingClaimTTL()+time.Second)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, errPostingElsewhere
		case <-tick.C:
		}
		if e.out.stopping() {
			return false, errPostingElsewhere
		}
		if p, err := e.deps.Proposals.Proposal(ctx, id); err == nil && p.Message != "" {
			return false, nil
		}
		if mine, err := e.deps.Proposals.Claim(ctx, postingClaim(id), holder, e.postingClaimTTL()); err == nil && mine {
			return true, nil
		}
	}
}

// retryWrite tries a write that records what was already sent until it
// succeeds, ctx ends or bookkeepingTimeout has passed, whichever is
// first: a Redis that restarts for a second must not make a posted preview
// look unposted, or the request's next worker posts it again (the soak
// test saw exactly that), and a Redis that is gone must not keep a
// shutdown waiting.
func retryWrite(ctx context.Context, write func() error) error {
	ctx, cancel := context.WithTimeout(ctx, bookkeepingTimeout)
	defer cancel()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := write()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}
