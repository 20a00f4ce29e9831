package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// dial connects to the soak's Postgres, briefly: it may be restarting.
func dial(ctx context.Context, svc *services) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pgx.Connect(ctx, svc.databaseURL)
}

// watchLeases looks every second at the runner cards of running runs that
// may be worked (every card they depend on Done, attempts left) and notes
// any left unclaimed, or held by one runner of the model, for longer than
// the lease times the attempts a round has: a card no replica takes, or a
// runner that holds on. The over-budget channel's cards wait by design;
// a hook's card is held until the tool answers. Time Postgres is away
// does not count: the watch starts again when it is back (from a failed
// look, or the end of a restart the soak made).
func (d *runDriver) watchLeases(ctx context.Context) {
	limit := runLease * maxAttempts
	type seen struct{ since time.Time }
	unclaimed := map[string]seen{}
	held := map[string]seen{}
	for ctx.Err() == nil {
		time.Sleep(time.Second)
		cards, err := d.workable(ctx)
		if err != nil {
			clear(unclaimed)
			clear(held)
			continue
		}
		now := time.Now()
		back := d.svc.pgBackSince()
		nextU, nextH := map[string]seen{}, map[string]seen{}
		for _, c := range cards {
			switch {
			case c.channel == "slack:"+budgetChannel:
			case !c.held:
				k := c.run + " " + c.card
				s, ok := unclaimed[k]
				if !ok || s.since.Before(back) {
					s = seen{now}
				}
				nextU[k] = s
				if now.Sub(s.since) > limit {
					d.linger(fmt.Sprintf("%s of run %s left unclaimed for %s", c.handle, c.run, now.Sub(s.since).Round(time.Second)))
					s.since = now
					nextU[k] = s
				}
			case c.runner == "model":
				k := c.run + " " + c.card + " " + c.holder
				s, ok := held[k]
				if !ok || s.since.Before(back) {
					s = seen{now}
				}
				nextH[k] = s
				if now.Sub(s.since) > limit {
					d.linger(fmt.Sprintf("%s of run %s held by one runner for %s", c.handle, c.run, now.Sub(s.since).Round(time.Second)))
					s.since = now
					nextH[k] = s
				}
			}
		}
		unclaimed, held = nextU, nextH
	}
}

func (d *runDriver) linger(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lingered = append(d.lingered, what)
}

type workableCard struct {
	run, card, runner, holder, handle, channel string
	held                                       bool
}

// workable lists the runner cards of running runs that a runner may work
// now or works.
func (d *runDriver) workable(ctx context.Context) ([]workableCard, error) {
	conn, err := dial(ctx, d.svc)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT rc.run_id, rc.card_id, rc.runner, rc.holder, b.key || '-' || c.number, b.channel,
    coalesce(rc.lease_until > now(), false)
FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id
WHERE r.state = 'running' AND rc.runner <> '' AND c.status IN ('Backlog', 'Ready', 'In Progress') AND rc.attempts < $1
  AND NOT EXISTS (SELECT 1 FROM card_links l JOIN cards x ON x.id = l.depends_on WHERE l.card_id = c.id AND x.status <> 'Done')`, maxAttempts)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workableCard, error) {
		var c workableCard
		err := r.Scan(&c.run, &c.card, &c.runner, &c.holder, &c.handle, &c.channel, &c.held)
		return c, err
	})
}

// runsGoing counts the runs not ended; -1 when Postgres does not answer.
func runsGoing(ctx context.Context, svc *services) int {
	conn, err := dial(ctx, svc)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int
	// A run whose end is not yet told is still going as far as its
	// thread knows: its replica may have died before telling it, and
	// another tells it once its retelling is due.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM runs WHERE state = 'running' OR end_told_at IS NULL`).Scan(&n); err != nil {
		return -1
	}
	return n
}
