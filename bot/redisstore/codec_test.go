package redisstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// fullProposal has every field set, and text that needs escaping, so the
// comparison below covers the whole type.
func fullProposal(t *testing.T) board.Proposal {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	if !res.Valid {
		t.Fatalf("newspaper plan: %+v", res.Errors)
	}
	env := *res.Plan
	now := time.Date(2026, 11, 23, 10, 4, 5, 123456789, time.UTC)
	return board.Proposal{
		ID: "p_abc", Version: 2, Supersedes: "p_old", RequestID: "r_abc",
		Thread:      board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "C1"}, ID: "1700000000.000100"},
		RequestedBy: "alice", Request: "plan <our> \"daily\" newspaper & more \u2028 é 🗞",
		Plan: env, Warnings: []plan.Issue{{Path: "$.actions[0]", Message: "a warning"}},
		Changes:      &board.Changes{Added: []string{"A"}, Retitled: []board.Change{{From: "x", To: "y"}}, BoardChanged: &board.Change{From: "a", To: "b"}},
		BoardChanges: []board.BoardChange{{Card: "NEWS-1", Title: "t", Field: "status", From: "Backlog", To: "Done"}},
		State:        board.ProposalApproved, CreatedAt: now, ExpiresAt: now.Add(time.Hour), DecidedBy: "bob", DecidedAt: now.Add(time.Minute),
		BoardID: "b_1", BoardURL: "http://bobnet.test/boards/b_1", TargetBoard: "b_0", Message: "1700000000.000200", Chain: "p_first",
		Quorum: &board.Quorum{Key: "slack:C1", Policy: board.Policy{Deciders: []string{"requester", "U2"}, Approvals: 2, SelfApproval: true}, Needed: 2, Approvals: []string{"U2"}},
	}
}

func TestDecodeProposalMatchesEncodingJSON(t *testing.T) {
	for name, p := range map[string]board.Proposal{"full": fullProposal(t), "empty": {}, "pending": {ID: "p_1", State: board.ProposalPending}} {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var want board.Proposal
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeProposal(p.ID, string(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: go-json decoded\n%+v\nencoding/json decoded\n%+v", name, got, want)
		}
	}
	if _, err := decodeProposal("p_bad", `{"id":"p_bad","version":"two"}`); err == nil {
		t.Fatal("a malformed proposal decoded without an error")
	}
}

// fullRecord has every field a record can carry set, with text that
// needs escaping.
func fullRecord(text string) board.RequestRecord {
	at := time.Date(2026, 12, 6, 9, 0, 0, 123456789, time.FixedZone("x", 3600))
	return board.RequestRecord{
		Request: board.Request{
			ID: "r_abcdefghijklmnop", Thread: board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "T1:C1"}, ID: "1700000000.000100"},
			User: "U1", UserName: "Ann <ann@example.org>", Text: text, DedupeKey: "slack-message:C1:" + text, Revises: "p_a", Feedback: text,
			Again: "p_b", Quoted: []plan.Turn{{Role: "user", User: "U2", Text: text}}, Via: "hook:" + text,
			Webhook: &board.HookOrigin{Hook: "github", ID: text}, ReceivedAt: at,
		},
		Status: board.RequestStatus{ID: "r_abcdefghijklmnop", State: board.RequestDone, Reply: &board.Reply{Kind: board.ReplyError, Text: text},
			ProposalID: "p_c", Error: text, DuplicateOf: "r_x"},
		Taken:  true,
		Answer: &board.Answer{Reply: &board.Reply{Kind: board.ReplyInfo, Text: text}, ProposalID: "p_d", Failure: text},
	}
}

func TestEncodeRecordMatchesEncodingJSON(t *testing.T) {
	// Every field of the full record is set, so a field added to the
	// types is compared too, or this fails until fullRecord sets it.
	full := fullRecord("x")
	for _, v := range []any{full.Request, full.Status, full, *full.Answer} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Errorf("fullRecord leaves %T.%s unset", v, rv.Type().Field(i).Name)
			}
		}
	}
	for _, text := range []string{"plan <our> \"daily\" newspaper & more", "\u2028 \u2029 é 🗞 \t\n\\", "bad \xff\xfe utf-8", "", "\x00\x1f\f\b\r\x7f", "\xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf"} {
		for _, r := range []board.RequestRecord{fullRecord(text), intakeRecord(text), {Request: board.Request{ID: "r_1", Text: text}}} {
			sameRecord(t, r)
		}
	}
	// A record as taken in is written field by field; one with more, or
	// with a time JSON cannot spell, by go-json.
	if _, ok := appendIntakeRecord(nil, new(intakeRecord("x"))); !ok {
		t.Error("a record as taken in is not written field by field")
	}
	full = fullRecord("x")
	if _, ok := appendIntakeRecord(nil, &full); ok {
		t.Error("a record with quoted turns, a webhook and an answer is written field by field")
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))} {
		r := intakeRecord("x")
		r.Request.ReceivedAt = at
		if _, ok := appendIntakeRecord(nil, &r); ok {
			t.Errorf("received at %v: written field by field", at)
		}
		_, err := encodeRecord(r)
		if _, std := json.Marshal(r); (err == nil) != (std == nil) {
			t.Errorf("received at %v: encodeRecord's error %v, encoding/json's %v", at, err, std)
		}
	}
}

// intakeRecord is fullRecord as a request is taken in: no quoted turns,
// webhook, reply or answer.
func intakeRecord(text string) board.RequestRecord {
	r := fullRecord(text)
	r.Request.Quoted, r.Request.Webhook, r.Status.Reply, r.Answer = nil, nil, nil, nil
	return r
}

// sameRecord checks that r encoded by encodeRecord reads back, with
// encoding/json, as r encoded by encoding/json does (go-json spells some
// escapes apart: \u000c for \f).
func sameRecord(t *testing.T, r board.RequestRecord) {
	t.Helper()
	std, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	var a, b board.RequestRecord
	if err := json.Unmarshal(std, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("go-json wrote\n%s (%v)\nencoding/json\n%s", got, err, std)
	}
}

func FuzzEncodeRecord(f *testing.F) {
	f.Add("plan <our> newspaper", "U1")
	f.Add("bad \xff utf-8 \u2028", "")
	f.Fuzz(func(t *testing.T, text, user string) {
		r := fullRecord(text)
		r.Request.User, r.Request.UserName = user, user
		sameRecord(t, r)
		r = intakeRecord(text)
		r.Request.User, r.Request.Thread.ID = user, user
		sameRecord(t, r)
	})
}

// BenchmarkEncodeRecord: a Slack mention's record as it is taken in,
// written field by field (as encodeRecord does) and by go-json.
func BenchmarkEncodeRecord(b *testing.B) {
	r := board.RequestRecord{
		Request: board.Request{ID: "r_unjfw4hnejfontxm", Thread: board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: "C_dndp8wcotla5r1k0s0_18738"}, ID: "1700000000.018738"},
			User: "U18738", Text: "plan our daily research newspaper (ref C_dndp8wcotla5r1k0s0_18738)", DedupeKey: "slack-message:1700000000.018738",
			ReceivedAt: time.Date(2026, 12, 6, 13, 55, 11, 171479489, time.UTC)},
		Status: board.RequestStatus{ID: "r_unjfw4hnejfontxm", State: board.RequestQueued},
	}
	b.Run("fields", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeRecord(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := gojson.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
