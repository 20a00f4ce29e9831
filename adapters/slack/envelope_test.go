package slack

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// envelopeSeeds are Events API bodies as Slack sends them (an
// app_mention with its blocks and authorizations, a thread reply, a
// revocation, App Home, the URL check) and the odd shapes the decoder
// must read as encoding/json does.
var envelopeSeeds = []string{
	`{"token":"XXYYZZ","team_id":"T1","api_app_id":"A1","event":{"type":"app_mention","user":"U123","text":"<@UBOBNET> plan our newspaper","ts":"1700000000.000001","channel":"C1","event_ts":"1700000000.000001","client_msg_id":"8ce2d0b8","team":"T1","blocks":[{"type":"rich_text","block_id":"abc","elements":[{"type":"rich_text_section","elements":[{"type":"user","user_id":"UBOBNET"},{"type":"text","text":" plan"}]}]}]},"type":"event_callback","event_id":"Ev08ABCDEF","event_time":1700000000,"authorizations":[{"enterprise_id":null,"team_id":"T1","user_id":"UBOBNET","is_bot":true,"is_enterprise_install":false}],"is_ext_shared_channel":false,"event_context":"4-eyJldCI6"}`,
	`{"type":"event_callback","team_id":"T1","enterprise_id":"E1","event_id":"Ev2","event_time":1700000001,"event":{"type":"message","user":"U1","text":"caf\u00e9 \ud83d\ude00 \"quoted\"\n","ts":"1.2","thread_ts":"1.1","channel":"C1"},"authorizations":[{"team_id":null,"enterprise_id":"E1","is_enterprise_install":true}]}`,
	`{"type":"event_callback","event":{"type":"tokens_revoked","tokens":{"oauth":["U1"],"bot":["U2","U3"]}}}`,
	`{"type":"event_callback","event":{"type":"app_home_opened","user":"U1","tab":"home","channel":"D1"}}`,
	`{"type":"url_verification","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","token":"x"}`,
	`{"type":"event_callback","event":{"type":"message","subtype":"bot_message","bot_id":"B1","text":"hi"}}`,
	`{"Type":"event_callback","EVENT":{"Channel":"C1"},"event_time":null}`, `{"event":{"channel":"C1"},"event":null}`,
	`{"type":"event_callback","event_time":1.5}`, `{"type":5}`, `{"event":{"tokens":{"bot":[1]}}}`, `{"event":{"tokens":null}}`,
	`{"authorizations":[null,{"team_id":"T2"}]}`, `{"authorizations":{}}`, `{"event_time":NaN}`, `{"event_time":1.2.3}`,
	`{"text":"\ud800"}`, `{"event":{"text":"\ud800\u0041"}}`, `{"event":{"text":"a\xffb"}}`, `{"t\u0079pe":"x"}`,
	`null`, `[]`, `"x"`, ``, `{}`, `{"type":"a"} x`, `{"type":"a",}`,
	"{\"\":{\"\":\"\x11\\b\"}}", "{\"event\":{\"text\":\"a\n\\tb\"}}", "{\n\"type\":\t\"a\"\r\n}",
}

// FuzzEnvelopeMatchesEncodingJSON holds decodeEnvelope to json.Unmarshal:
// both refuse the same bodies and read the others to the same values.
// Bodies that repeat a field the decoder reads are left out:
// encoding/json then merges into elements of a slice it decoded before,
// which no Slack body asks of either.
func FuzzEnvelopeMatchesEncodingJSON(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want, got eventEnvelope
		werr := json.Unmarshal(body, &want)
		gerr := decodeEnvelope(&fastjson.ParserPool{}, body, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("body %q: encoding/json says %v, decodeEnvelope %v", body, werr, gerr)
		}
		if werr != nil || repeatsField(body) {
			return
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("body %q:\nencoding/json  %+v\ndecodeEnvelope %+v", body, want, got)
		}
	})
}

// TestEnvelopeSeedsDecode checks what the seeds read to, so that the fuzz
// target's agreement is not two decoders agreeing on nothing.
func TestEnvelopeSeedsDecode(t *testing.T) {
	var env eventEnvelope
	if err := decodeEnvelope(&fastjson.ParserPool{}, []byte(envelopeSeeds[0]), &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != "event_callback" || env.EventID != "Ev08ABCDEF" || env.EventTime != 1700000000 || env.TeamID != "T1" ||
		env.Event.Type != "app_mention" || env.Event.User != "U123" || env.Event.Channel != "C1" || env.Event.Text != "<@UBOBNET> plan our newspaper" ||
		len(env.Authorizations) != 1 || env.Authorizations[0].TeamID != "T1" {
		t.Fatalf("mention = %+v", env)
	}
	env = eventEnvelope{}
	if err := decodeEnvelope(&fastjson.ParserPool{}, []byte(envelopeSeeds[1]), &env); err != nil {
		t.Fatal(err)
	}
	if env.Event.Text != "café 😀 \"quoted\"\n" || env.Event.ThreadTS != "1.1" || !env.Authorizations[0].IsEnterpriseInstall || env.EnterpriseID != "E1" {
		t.Fatalf("reply = %+v", env)
	}
	env = eventEnvelope{}
	if err := decodeEnvelope(&fastjson.ParserPool{}, []byte(envelopeSeeds[2]), &env); err != nil || strings.Join(env.Event.Tokens.Bot, ",") != "U2,U3" {
		t.Fatalf("revocation = %+v, %v", env, err)
	}
	for _, bad := range []string{`{"type":5}`, `{"event_time":1.5}`, `{"event_time":NaN}`, `[]`, ``, `{"type":"a"} x`} {
		if err := decodeEnvelope(&fastjson.ParserPool{}, []byte(bad), &eventEnvelope{}); err == nil {
			t.Errorf("%s: read without an error", bad)
		}
	}
}

// repeatsField says whether an object of body the decoder reads names
// one of its fields twice (in any case).
func repeatsField(body []byte) bool {
	v, err := fastjson.ParseBytes(body)
	if err != nil {
		return false
	}
	var repeats func(v *fastjson.Value, names []string, nested map[string][]string) bool
	repeats = func(v *fastjson.Value, names []string, nested map[string][]string) bool {
		o, err := v.Object()
		if err != nil {
			return false
		}
		seen := map[string]bool{}
		found := false
		o.Visit(func(k []byte, v *fastjson.Value) {
			for _, n := range names {
				if strings.EqualFold(string(k), n) {
					if seen[n] {
						found = true
					}
					seen[n] = true
					if sub, ok := nested[n]; ok {
						if n == "authorizations" {
							for _, item := range v.GetArray() {
								found = found || repeats(item, sub, nil)
							}
						} else {
							found = found || repeats(v, sub, map[string][]string{"tokens": {"bot"}})
						}
					}
				}
			}
		})
		return found
	}
	return repeats(v, envelopeFields, map[string][]string{"event": innerFields, "authorizations": authorizationFields})
}

// hasControl, eight bytes at a time, answers as a byte-by-byte look does,
// wherever the byte is and whatever surrounds it (bytes at the edges of
// the range, and at and above 0x80, where the trick could go wrong).
func TestHasControlMatchesAByteByByteLook(t *testing.T) {
	edges := []byte{0x00, 0x01, 0x0a, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0x9f, 0xa0, 0xdf, 0xe0, 0xff, 'a', '"', '\\'}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = edges[r.IntN(len(edges))]
			if r.IntN(3) > 0 {
				b[i] = 0x20 + byte(r.IntN(0xe0)) // mostly none, so the control byte is alone
			}
		}
		want := false
		for _, c := range b {
			want = want || c < 0x20
		}
		if got := hasControl(b); got != want {
			t.Fatalf("hasControl(%q) = %v, want %v", b, got, want)
		}
	}
}

// An envelope's strings are its own: the parser that read it reads the
// next body into the same buffer, and what was read before stays as it
// was.
func TestEnvelopeStringsOutliveTheParser(t *testing.T) {
	var parsers fastjson.ParserPool
	read := func(body string) eventEnvelope {
		t.Helper()
		var env eventEnvelope
		if err := decodeEnvelope(&parsers, []byte(body), &env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	first := read(envelopeSeeds[0])
	want := first
	want.Event.Text = strings.Clone(first.Event.Text)
	want.TeamID, want.EventID = strings.Clone(first.TeamID), strings.Clone(first.EventID)
	for i := range 50 { // the pool hands the same parser back, most of the time
		read(strings.NewReplacer("T1", "T9", "plan", "PLAN", "Ev08", "Zz08").Replace(envelopeSeeds[0]) + strings.Repeat(" ", i))
	}
	if first.Event.Text != want.Event.Text || first.TeamID != want.TeamID || first.EventID != want.EventID {
		t.Errorf("first envelope changed by later reads: %q %q %q", first.Event.Text, first.TeamID, first.EventID)
	}
	if first.Event.Text != "<@UBOBNET> plan our newspaper" {
		t.Errorf("text = %q", first.Event.Text)
	}
}
