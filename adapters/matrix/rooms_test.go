package matrix_test

import (
	"slices"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
)

// waitLeft waits until the bot is no longer in room, as its account sees it.
func (w *world) waitLeft(room id.RoomID) {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := w.bot.cli.JoinedRooms(ctx30(t))
		if err == nil && !slices.Contains(resp.JoinedRooms, room) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the bot is still in %s", room)
}

func TestMatrixFirstStartIgnoresHistory(t *testing.T) {
	w := newWorld(t)
	// The bot's account is in the room and a request waits there before
	// BobNet ever ran.
	resp, err := w.alice.cli.CreateRoom(ctx30(t), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{w.bot.ID}})
	if err != nil {
		t.Fatal(err)
	}
	w.room = resp.RoomID
	if _, err := w.bot.cli.JoinRoomByID(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	old := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)

	w.start()
	// What is sent before the first sync completes is history too; wait
	// for that sync to be saved.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if nb, err := w.env.Store.MatrixNextBatch(ctx30(t), string(w.bot.ID)); err == nil && nb != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bot never finished its first sync")
		}
	}
	fresh := w.say(w.alice, "BobNet plan our daily research newspaper, today's", "", true)
	w.waitFor("answer to the new request", w.preview(fresh, 1))
	if n := w.count(w.preview(old, 1)); n != 0 {
		t.Fatalf("history from before the first start was answered %d times", n)
	}
	if n := len(w.env.Model.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times, want 1", n)
	}
}

func TestMatrixLeavesWhenAskedOrAlone(t *testing.T) {
	w := newWorld(t)
	w.start()
	w.openRoom()
	w.say(w.carol, "!bobnet leave", "", false)
	w.waitLeft(w.room)

	// A second room: the bot leaves once everyone else has.
	w.openRoom()
	if _, err := w.carol.cli.LeaveRoom(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	if _, err := w.alice.cli.LeaveRoom(ctx30(t), w.room); err != nil {
		t.Fatal(err)
	}
	w.waitLeft(w.room)
}

func TestMatrixLogsInAgainWhenTheTokenIsRevoked(t *testing.T) {
	w := newWorld(t)
	r := w.start()
	w.openRoom()
	r1 := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	w.waitFor("first preview", w.preview(r1, 1))
	device := r.ad.DeviceID()

	// Every token of the bot's account is revoked, the adapter's too.
	if _, err := w.bot.cli.LogoutAll(ctx30(t)); err != nil {
		t.Fatal(err)
	}
	r2 := w.say(w.alice, "BobNet plan our daily research newspaper, second edition", "", true)
	w.waitFor("preview after logging in again", w.preview(r2, 1))
	if r.ad.DeviceID() != device {
		t.Fatalf("logged in again as device %s, want %s", r.ad.DeviceID(), device)
	}
}
