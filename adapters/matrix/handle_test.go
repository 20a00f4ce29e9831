package matrix

import (
	"errors"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

func testAdapter() *Adapter {
	return &Adapter{cfg: Config{
		UserID:         "@bobnet:example.org",
		AllowedServers: []string{"example.org", "partner.example"},
		AllowedRooms:   []id.RoomID{"!open:elsewhere.example"},
	}, name: "BobNet"}
}

func TestMentioned(t *testing.T) {
	t.Parallel()
	a := testAdapter()
	for _, tc := range []struct {
		name string
		c    event.MessageEventContent
		want bool
		text string
	}{
		{"m.mentions", event.MessageEventContent{Body: "plan it", Mentions: &event.Mentions{UserIDs: []id.UserID{"@bobnet:example.org"}}}, true, "plan it"},
		{"user id in body", event.MessageEventContent{Body: "@bobnet:example.org: plan it"}, true, "plan it"},
		{"display name", event.MessageEventContent{Body: "hey BobNet, plan it"}, true, "hey plan it"},
		{"display name lower case with @", event.MessageEventContent{Body: "@bobnet plan it"}, true, "plan it"},
		{"pill", event.MessageEventContent{Body: "Bob: plan it", FormattedBody: `<a href="https://matrix.to/#/@bobnet:example.org">Bob</a>: plan it`}, true, "Bob: plan it"},
		{"escaped pill", event.MessageEventContent{Body: "B: plan it", FormattedBody: `<a href="https://matrix.to/#/%40bobnet%3Aexample.org">B</a>: plan it`}, true, "B: plan it"},
		{"someone else", event.MessageEventContent{Body: "@alice:example.org plan it", Mentions: &event.Mentions{UserIDs: []id.UserID{"@alice:example.org"}}}, false, ""},
		{"name inside a word", event.MessageEventContent{Body: "the bobnetwork is down"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.mentioned(&tc.c); got != tc.want {
				t.Fatalf("mentioned = %v, want %v", got, tc.want)
			}
			if tc.want {
				if got := a.stripMention(tc.c.Body); got != tc.text {
					t.Fatalf("stripMention = %q, want %q", got, tc.text)
				}
			}
		})
	}
}

func TestAllowedInvite(t *testing.T) {
	t.Parallel()
	a := testAdapter()
	for _, tc := range []struct {
		room   id.RoomID
		sender id.UserID
		want   bool
	}{
		{"!r:example.org", "@alice:example.org", true},
		{"!r:example.org", "@bob:partner.example", true},
		{"!r:example.org", "@eve:evil.example", false},
		{"!open:elsewhere.example", "@eve:evil.example", true},
	} {
		if got := a.allowedInvite(tc.room, tc.sender); got != tc.want {
			t.Errorf("allowedInvite(%s, %s) = %v, want %v", tc.room, tc.sender, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	limited := func(extra map[string]any) error {
		return mautrix.HTTPError{RespError: &mautrix.RespError{ErrCode: "M_LIMIT_EXCEEDED", ExtraData: extra}}
	}
	for _, tc := range []struct {
		name    string
		err     error
		wait    time.Duration
		limited bool
	}{
		{"retry_after_ms", limited(map[string]any{"retry_after_ms": float64(1500)}), 1500 * time.Millisecond, true},
		{"no hint", limited(nil), time.Second, true},
		{"capped", limited(map[string]any{"retry_after_ms": float64(3_600_000)}), 2 * time.Minute, true},
		{"other error", mautrix.HTTPError{RespError: &mautrix.RespError{ErrCode: "M_FORBIDDEN"}}, 0, false},
		{"not http", errors.New("boom"), 0, false},
		{"nil", nil, 0, false},
	} {
		wait, ok := retryAfter(tc.err)
		if wait != tc.wait || ok != tc.limited {
			t.Errorf("%s: retryAfter = %s, %v; want %s, %v", tc.name, wait, ok, tc.wait, tc.limited)
		}
	}
}
