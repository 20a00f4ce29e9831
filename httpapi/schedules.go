package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
)

// ScheduleStore is what the schedule API needs of storage; *store.Store
// is one. Boards are read for a token limited to channels.
type ScheduleStore interface {
	BoardReader
	SetSchedule(ctx context.Context, sc board.Schedule) error
	DeleteSchedule(ctx context.Context, id board.ID, user string) error
	ScheduleOf(ctx context.Context, id board.ID) (board.Schedule, error)
}

// Schedules serves a board's schedule: read, set, remove.
type Schedules struct {
	store ScheduleStore
	now   func() time.Time
}

// NewSchedules makes the schedule API.
func NewSchedules(store ScheduleStore, now func() time.Time) *Schedules {
	return &Schedules{store: store, now: now}
}

// Routes mounts the schedule API; the caller puts the token guard in
// front.
func (x *Schedules) Routes(r chi.Router) {
	r.Get("/api/v1/boards/{id}/schedule", x.read)
	r.Put("/api/v1/boards/{id}/schedule", x.set)
	r.Delete("/api/v1/boards/{id}/schedule", x.remove)
}

// scheduleView is a schedule with its next slot.
type scheduleView struct {
	board.Schedule
	Next time.Time `json:"next"`
}

func (x *Schedules) view(sc board.Schedule) scheduleView {
	next, _ := sc.Next(x.now())
	return scheduleView{Schedule: sc, Next: next}
}

func (x *Schedules) read(w http.ResponseWriter, r *http.Request) {
	id, ok := boardParam(w, r)
	if !ok || !x.reachBoard(w, r, id) {
		return
	}
	sc, err := x.store.ScheduleOf(r.Context(), id)
	if err != nil {
		scheduleFail(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, x.view(sc))
}

// scheduleBody is the body of PUT /api/v1/boards/{id}/schedule.
type scheduleBody struct {
	User     string `json:"user"`
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

func (x *Schedules) set(w http.ResponseWriter, r *http.Request) {
	id, ok := boardParam(w, r)
	if !ok {
		return
	}
	var body scheduleBody
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) || !x.reachBoard(w, r, id) {
		return
	}
	c, err := board.ParseSchedule(body.Cron, body.Timezone)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	sc := board.Schedule{Board: id, Cron: c.Expr, Timezone: c.Zone.String(), SetBy: body.User, LastSlot: x.now()}
	if err := x.store.SetSchedule(r.Context(), sc); err != nil {
		scheduleFail(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, x.view(sc))
}

func (x *Schedules) remove(w http.ResponseWriter, r *http.Request) {
	id, ok := boardParam(w, r)
	if !ok {
		return
	}
	var body who
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) || !x.reachBoard(w, r, id) {
		return
	}
	if err := x.store.DeleteSchedule(r.Context(), id, body.User); err != nil {
		scheduleFail(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"board_id": id, "schedule": nil})
}

// reachBoard answers, as for an unknown board, and reports false when a
// token limited to channels names a board it may not reach or that does
// not exist; other requests go on without a read.
func (x *Schedules) reachBoard(w http.ResponseWriter, r *http.Request, id board.ID) bool {
	if err := reachBoardErr(r, x.store, id); err != nil {
		scheduleFail(w, err)
		return false
	}
	return true
}

func boardParam(w http.ResponseWriter, r *http.Request) (board.ID, bool) {
	id, err := board.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no board "+chi.URLParam(r, "id"))
		return "", false
	}
	return id, true
}

func scheduleFail(w http.ResponseWriter, err error) {
	if errors.Is(err, board.ErrNotFound) {
		httpjson.Error(w, http.StatusNotFound, "no such board, or it has no schedule")
		return
	}
	httpjson.Error(w, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
}
