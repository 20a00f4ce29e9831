package matrix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Lease lets one replica at a time run the sync loop; *RedisLease is one.
type Lease interface {
	// Acquire takes the lease when nobody holds it.
	Acquire(ctx context.Context) (bool, error)
	// Renew extends the lease; false means it was lost.
	Renew(ctx context.Context) (bool, error)
	// Release gives the lease up so another replica takes over at once.
	Release(ctx context.Context) error
}

// SyncPositions keeps the sync filter's id and how far the sync has been
// processed, so a restart or another replica goes on from there.
type SyncPositions interface {
	MatrixFilterID(ctx context.Context, user string) (string, error)
	SaveMatrixFilterID(ctx context.Context, user, filterID string) error
	MatrixNextBatch(ctx context.Context, user string) (string, error)
	SaveMatrixNextBatch(ctx context.Context, user, token string) error
}

// syncStore is SyncPositions as mautrix's client keeps them
// (mautrix.SyncStore), so the client, and a crypto helper looking at it,
// use the positions in Postgres rather than memory.
type syncStore struct{ s SyncPositions }

// SaveFilterID implements mautrix.SyncStore.
func (w syncStore) SaveFilterID(ctx context.Context, user id.UserID, filterID string) error {
	return w.s.SaveMatrixFilterID(ctx, string(user), filterID)
}

// LoadFilterID implements mautrix.SyncStore.
func (w syncStore) LoadFilterID(ctx context.Context, user id.UserID) (string, error) {
	return w.s.MatrixFilterID(ctx, string(user))
}

// SaveNextBatch implements mautrix.SyncStore.
func (w syncStore) SaveNextBatch(ctx context.Context, user id.UserID, token string) error {
	return w.s.SaveMatrixNextBatch(ctx, string(user), token)
}

// LoadNextBatch implements mautrix.SyncStore.
func (w syncStore) LoadNextBatch(ctx context.Context, user id.UserID) (string, error) {
	return w.s.MatrixNextBatch(ctx, string(user))
}

var _ mautrix.SyncStore = syncStore{}

// longPoll is how long one /sync waits on the server for news.
const longPoll = 30 * time.Second

// Run syncs while this replica holds the lease and waits for it while
// another replica does, until ctx ends.
func (a *Adapter) Run(ctx context.Context) error {
	if a.lease == nil {
		return fmt.Errorf("%w: Run needs a lease", ErrConfig)
	}
	retry := a.cfg.LeaseTTL / 3
	for {
		ok, err := a.lease.Acquire(ctx)
		if err != nil {
			a.logger.Warn("matrix: acquire sync lease", "err", err)
		}
		if ok {
			a.logger.Info("matrix: this replica runs the sync loop", "user", a.cfg.UserID, "device", a.cli.DeviceID)
			err = a.holdAndSync(ctx)
			if ctx.Err() != nil {
				return nil
			}
			a.logger.Warn("matrix: sync loop ended; will try to take it again", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

// holdAndSync runs the sync loop while renewing the lease; losing the
// lease stops the loop.
func (a *Adapter) holdAndSync(ctx context.Context) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.syncing <- struct{}{}
	defer func() { <-a.syncing }()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(a.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(lctx, a.cfg.LeaseTTL/3)
			ok, err := a.lease.Renew(rctx)
			rcancel()
			if err != nil || !ok {
				if lctx.Err() == nil {
					a.logger.Warn("matrix: lost the sync lease", "err", err)
				}
				cancel()
				return
			}
		}
	}()
	err := a.syncLoop(lctx)
	cancel()
	<-renewed
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if rerr := a.lease.Release(rctx); rerr != nil {
		a.logger.Warn("matrix: release sync lease", "err", rerr)
	}
	return err
}

// syncFilter keeps the sync small: no presence, a room timeline of 50.
var syncFilter = &mautrix.Filter{
	Presence: &mautrix.FilterPart{NotTypes: []event.Type{event.EphemeralEventPresence}},
	Room:     &mautrix.RoomFilter{Timeline: &mautrix.FilterPart{Limit: 50}},
}

// syncLoop is BobNet's own loop rather than mautrix's: the sync position
// is saved after the response was handled, never before, so a crash
// replays the last batch (dedupe keys make that harmless) instead of
// losing it.
func (a *Adapter) syncLoop(ctx context.Context) error {
	since, err := a.store.MatrixNextBatch(ctx, string(a.cfg.UserID))
	if err != nil {
		return err
	}
	filterID, err := a.store.MatrixFilterID(ctx, string(a.cfg.UserID))
	if err != nil {
		return err
	}
	if filterID == "" {
		err := a.call(ctx, "create sync filter", func(ctx context.Context) error {
			resp, err := a.cli.CreateFilter(ctx, syncFilter)
			if err == nil {
				filterID = resp.FilterID
			}
			return err
		})
		if err != nil {
			return err
		}
		if err := a.store.SaveMatrixFilterID(ctx, string(a.cfg.UserID), filterID); err != nil {
			return err
		}
	}
	backoff := time.Second
	for ctx.Err() == nil {
		timeout := longPoll
		if since == "" {
			timeout = 0
		}
		var res *mautrix.RespSync
		// The long poll gets the call timeout on top of its own wait.
		err := a.callFor(ctx, "sync", timeout+a.cfg.CallTimeout, func(cctx context.Context) error {
			var err error
			res, err = a.cli.FullSyncRequest(cctx, mautrix.ReqSync{Timeout: int(timeout / time.Millisecond), Since: since, FilterID: filterID})
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, mautrix.MUnknownToken) {
				return fmt.Errorf("matrix: the access token was revoked: %w", err)
			}
			a.logger.Warn("matrix: sync failed; retrying", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Minute)
			continue
		}
		backoff = time.Second
		hctx := context.WithValue(ctx, oldEventsKey{}, oldEvents(a.cfg.UserID, res, since))
		if err := a.cli.Syncer.ProcessResponse(hctx, res, since); err != nil {
			return fmt.Errorf("matrix: handle sync: %w", err)
		}
		if ctx.Err() != nil {
			// The lease went away while handling: the next holder
			// replays this batch rather than this replica claiming it.
			return nil
		}
		if err := a.store.SaveMatrixNextBatch(ctx, string(a.cfg.UserID), res.NextBatch); err != nil {
			return err
		}
		since = res.NextBatch
	}
	return nil
}

type oldEventsKey struct{}

// oldEvents lists the timeline events not to act on: on the very first
// sync all of them (history from before BobNet ran), and in a room BobNet
// has just joined those up to its join (history from before it was there).
// Their state still reaches the state and crypto stores.
func oldEvents(self id.UserID, res *mautrix.RespSync, since string) map[id.EventID]bool {
	old := map[id.EventID]bool{}
	for _, room := range res.Rooms.Join {
		evts := room.Timeline.Events
		cut := -1
		if since == "" {
			cut = len(evts) - 1
		} else {
			for i, e := range evts {
				if e.Type == event.StateMember && e.StateKey != nil && *e.StateKey == string(self) &&
					e.Content.Raw["membership"] == string(event.MembershipJoin) {
					cut = i
				}
			}
		}
		for _, e := range evts[:cut+1] {
			old[e.ID] = true
		}
	}
	return old
}

// isOld says whether evt is history the handlers must not act on.
func isOld(ctx context.Context, evt *event.Event) bool {
	old, _ := ctx.Value(oldEventsKey{}).(map[id.EventID]bool)
	return old[evt.ID]
}
