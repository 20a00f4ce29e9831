package pending

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// fullProposal has every field set, and text that needs escaping, so the
// comparison below covers the whole type.
func fullProposal(t *testing.T) bot.Proposal {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	if !res.Valid {
		t.Fatalf("newspaper plan: %+v", res.Errors)
	}
	env := *res.Plan
	now := time.Date(2026, 11, 23, 10, 4, 5, 123456789, time.UTC)
	return bot.Proposal{
		ID: "p_abc", Version: 2, Supersedes: "p_old", RequestID: "r_abc",
		Thread:      bot.Thread{Channel: bot.Channel{Source: bot.SourceSlack, ID: "C1"}, ID: "1700000000.000100"},
		RequestedBy: "alice", Request: "plan <our> \"daily\" newspaper & more \u2028 é 🗞",
		Plan: env, Warnings: []plan.Issue{{Path: "$.actions[0]", Message: "a warning"}},
		Changes:      &bot.Changes{Added: []string{"A"}, Retitled: []bot.Change{{From: "x", To: "y"}}, BoardChanged: &bot.Change{From: "a", To: "b"}},
		BoardChanges: []bot.BoardChange{{Card: "NEWS-1", Title: "t", Field: "status", From: "Backlog", To: "Done"}},
		State:        bot.ProposalApproved, CreatedAt: now, ExpiresAt: now.Add(time.Hour), DecidedBy: "bob", DecidedAt: now.Add(time.Minute),
		BoardID: "b_1", BoardURL: "http://bobnet.test/boards/b_1", TargetBoard: "b_0", Message: "1700000000.000200", Chain: "p_first",
		Quorum: &bot.Quorum{Key: "slack:C1", Policy: board.Policy{Deciders: []string{"requester", "U2"}, Approvals: 2, SelfApproval: true}, Needed: 2, Approvals: []string{"U2"}},
	}
}

func TestDecodeProposalMatchesEncodingJSON(t *testing.T) {
	for name, p := range map[string]bot.Proposal{"full": fullProposal(t), "empty": {}, "pending": {ID: "p_1", State: bot.ProposalPending}} {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var want bot.Proposal
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

// recordStrings are the values the record tests put in string fields:
// empty (omitted where omitempty), plain, and every kind of character
// encoding/json escapes.
var recordStrings = []string{
	"", "r_abc", "plan <script>alert(1)</script> & \"co\" \\ ",
	"\u2028\u2029 é 🗞 \x00 \x1f \b\f\n\r\t \x7f", "\xff invalid \xe2\x80 cut",
}

// fillRecord sets every field reachable from v: a string from
// recordStrings, a bool, a pointer allocated or left nil, a slice of zero
// to two strings, a time. With all set, every field of every type in a
// record is written; with rnd choosing, the omitempty combinations are.
func fillRecord(v reflect.Value, rnd *rand.Rand, all bool) {
	pick := func(n int) int {
		if all {
			return n - 1
		}
		return rnd.IntN(n)
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(recordStrings[pick(len(recordStrings))])
	case reflect.Bool:
		v.SetBool(pick(2) == 1)
	case reflect.Pointer:
		if pick(2) == 1 {
			v.Set(reflect.New(v.Type().Elem()))
			fillRecord(v.Elem(), rnd, all)
		}
	case reflect.Slice:
		n := pick(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRecord(s.Index(i), rnd, all)
		}
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			zones := []*time.Location{time.UTC, time.FixedZone("CET", 3600), time.FixedZone("odd", -(3*3600 + 30*60))}
			t := time.Date(2026, 11, 23, 10, 4, 5, 123456789, zones[pick(len(zones))])
			v.Set(reflect.ValueOf(t.Add(time.Duration(pick(1000)) * time.Millisecond).Truncate(time.Duration(1+pick(3)) * time.Microsecond)))
			return
		}
		for i := range v.NumField() {
			fillRecord(v.Field(i), rnd, all)
		}
	default:
		panic("fillRecord: add a case for " + v.Type().String())
	}
}

// TestEncodeRecordMatchesEncodingJSON holds the hand-written encoder to
// encoding/json's bytes: with every field of every type set, so that a
// field added to a record's types and not to the encoder fails here, and
// with fields set at random, for the omitempty combinations.
func TestEncodeRecordMatchesEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	records := map[string]bot.RequestRecord{"empty": {}}
	var full bot.RequestRecord
	fillRecord(reflect.ValueOf(&full).Elem(), rnd, true)
	records["full"] = full
	for i := range 2000 {
		var r bot.RequestRecord
		fillRecord(reflect.ValueOf(&r).Elem(), rnd, false)
		records[fmt.Sprint("random ", i)] = r
	}
	for name, r := range records {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s: encodeRecord wrote\n%s\nencoding/json wrote\n%s", name, got, want)
		}
	}
	// A year RFC 3339 cannot hold is refused, as time.Time refuses it.
	var far bot.RequestRecord
	far.Request.ReceivedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(far); err == nil {
		t.Fatal("encoding/json wrote year 10000")
	}
	if _, err := encodeRecord(far); err == nil {
		t.Fatal("encodeRecord wrote year 10000")
	}
}

// FuzzAppendJSONString holds the record encoder's string escaping to
// encoding/json's for any bytes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range recordStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: wrote %s, encoding/json %s", s, got[1:], want)
		}
	})
}
