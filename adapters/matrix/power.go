package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/bot"
)

// powerTTL is how long a room's power levels are reused. The syncing
// replica forgets them as soon as they change; the others may act on
// the old levels for at most this long.
const powerTTL = 10 * time.Second

// powerCache keeps rooms' m.room.power_levels (and m.room.create, which
// never changes and says who the creators are) so a burst of reactions
// asks the homeserver once.
type powerCache struct {
	mu      sync.Mutex
	levels  map[id.RoomID]cachedLevels
	creates map[id.RoomID]*event.Event
}

type cachedLevels struct {
	pl *event.PowerLevelsEventContent
	at time.Time
	// gen is the room's invalidation count when the read started; a read
	// that raced a change is not kept.
	gen int
}

func (c *powerCache) get(room id.RoomID) (*event.PowerLevelsEventContent, *event.Event, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.levels[room]
	if ok && l.pl != nil && time.Since(l.at) < powerTTL {
		return l.pl, c.creates[room], l.gen
	}
	return nil, c.creates[room], l.gen
}

func (c *powerCache) put(room id.RoomID, pl *event.PowerLevelsEventContent, create *event.Event, gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.levels == nil {
		c.levels, c.creates = map[id.RoomID]cachedLevels{}, map[id.RoomID]*event.Event{}
	}
	if create != nil {
		c.creates[room] = create
	}
	if c.levels[room].gen == gen {
		c.levels[room] = cachedLevels{pl: pl, at: time.Now(), gen: gen}
	}
}

// forget drops a room's power levels: they changed.
func (c *powerCache) forget(room id.RoomID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.levels == nil {
		c.levels, c.creates = map[id.RoomID]cachedLevels{}, map[id.RoomID]*event.Event{}
	}
	c.levels[room] = cachedLevels{gen: c.levels[room].gen + 1}
}

var _ bot.PowerLevels = (*Adapter)(nil)

// onPowerLevels forgets a room's cached levels when they change, so a
// member just made moderator may decide at once.
func (a *Adapter) onPowerLevels(_ context.Context, evt *event.Event) {
	a.power.forget(evt.RoomID)
}

// PowerLevel is a room member's power level from the room's
// m.room.power_levels state: users[user], else users_default (0 when the
// room has none; the creator's is 100 then, and unbounded in rooms whose
// version gives creators power of their own). It implements
// bot.PowerLevels for "matrix_power:N" deciders.
func (a *Adapter) PowerLevel(ctx context.Context, room, user string) (int, error) {
	r := id.RoomID(room)
	pl, create, gen := a.power.get(r)
	if pl == nil {
		var err error
		if create == nil {
			err = a.call(ctx, "read room creation", func(ctx context.Context) error {
				var err error
				create, err = a.cli.FullStateEvent(ctx, r, event.StateCreate, "")
				return err
			})
			if err != nil {
				return 0, fmt.Errorf("power level of %s in %s: %w", user, room, err)
			}
		}
		pl = &event.PowerLevelsEventContent{}
		err = a.call(ctx, "read power levels", func(ctx context.Context) error {
			return a.cli.StateEvent(ctx, r, event.StatePowerLevels, "", pl)
		})
		switch {
		case errors.Is(err, mautrix.MNotFound):
			// No power levels: the creator has 100, everyone else 0.
			pl = &event.PowerLevelsEventContent{Users: map[id.UserID]int{create.Sender: 100}}
		case err != nil:
			return 0, fmt.Errorf("power level of %s in %s: %w", user, room, err)
		}
		if create != nil && create.Sender != "" {
			// Room versions that give creators power of their own
			// name them here, not in users.
			pl.CreateEvent = create
		}
		a.power.put(r, pl, create, gen)
	}
	return pl.GetUserLevel(id.UserID(user)), nil
}
