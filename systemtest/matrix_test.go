package systemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"
)

// registerMatrix creates an account on the test homeserver, skipping
// without one.
func registerMatrix(t *testing.T, prefix string) (*mautrix.Client, string) {
	t.Helper()
	hs, secret := os.Getenv("MATRIX_TEST_HOMESERVER"), os.Getenv("MATRIX_TEST_SHARED_SECRET")
	if hs == "" {
		t.Skip("MATRIX_TEST_HOMESERVER is not set; `make test` starts a Dendrite and sets it")
	}
	cli, err := mautrix.NewClient(hs, "", "")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	name, password := prefix+hex.EncodeToString(b), "pw-"+hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := (&synapseadmin.Client{Client: cli}).SharedSecretRegister(ctx, secret, synapseadmin.ReqSharedSecretRegister{Username: name, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	cli.UserID, cli.AccessToken, cli.DeviceID = resp.UserID, resp.AccessToken, resp.DeviceID
	return cli, password
}

func TestServeAnswersInMatrix(t *testing.T) {
	botCli, password := registerMatrix(t, "bobnet-")
	alice, _ := registerMatrix(t, "alice-")
	// Serve runs Matrix's sync as its intake: the bot joins the room it
	// is invited to and answers there.
	start(t, withEnv(map[string]string{
		"MATRIX_HOMESERVER": os.Getenv("MATRIX_TEST_HOMESERVER"), "MATRIX_USER_ID": string(botCli.UserID), "MATRIX_PASSWORD": password,
	}))

	cctx, ccancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ccancel()
	room, err := alice.CreateRoom(cctx, &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{botCli.UserID}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if m, err := alice.JoinedMembers(cctx, room.RoomID); err == nil {
			if _, ok := m.Joined[botCli.UserID]; ok {
				break
			}
		}
		if cctx.Err() != nil {
			t.Fatal("the bot never joined")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := alice.SendMessageEvent(cctx, room.RoomID, event.EventMessage, &event.MessageEventContent{
		MsgType: event.MsgText, Body: "plan our daily research newspaper", Mentions: &event.Mentions{UserIDs: []id.UserID{botCli.UserID}},
	}); err != nil {
		t.Fatal(err)
	}
	for cctx.Err() == nil {
		msgs, err := alice.Messages(cctx, room.RoomID, "", "", mautrix.DirectionBackward, nil, 100)
		if err == nil {
			for _, e := range msgs.Chunk {
				if e.Sender == botCli.UserID && e.Type == event.EventMessage && strings.Contains(string(e.Content.VeryRaw), "Daily Research Newspaper") {
					return
				}
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatal("no preview from bobnet serve in Matrix")
}

func TestServeRefusesABadMatrixToken(t *testing.T) {
	botCli, _ := registerMatrix(t, "bobnet-")
	var err error
	start(t, withEnv(map[string]string{
		"MATRIX_HOMESERVER": os.Getenv("MATRIX_TEST_HOMESERVER"), "MATRIX_USER_ID": string(botCli.UserID), "MATRIX_ACCESS_TOKEN": "not-a-token",
	}), startFails(&err))
	if err == nil || !strings.Contains(err.Error(), "MATRIX_ACCESS_TOKEN") {
		t.Fatalf("start = %v, want an error naming MATRIX_ACCESS_TOKEN", err)
	}
}
