package slack

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// mentionPattern is the mention markup as a regular expression, the
// reference nextMention is held to.
var mentionPattern = regexp.MustCompile(`<@[A-Z0-9]+(\|[^>]*)?>`)

// Stripping and finding mentions by hand does what the regular expression
// does, for the markup Slack sends and for random text built from the
// characters that matter to it.
func TestMentionsMatchRegexp(t *testing.T) {
	t.Parallel()
	cases := []string{
		"<@UBOBNET> plan our daily research newspaper",
		"<@U123|bob> plan it with <@U456>",
		"no mention", "", "<@", "<@>", "<@u1>", "<@U1", "<@U1|", "<@U1|x", "<@U1|>", "<<@U1>>", "<@U1|a\nb>",
		"<@U1><@U2>", "a <@U1|x <@U2> y> z", "<@U1 >", "<@@U1>", "<@U1|é>", "é<@U1>é",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "<@|>AZ09az \né"
	for range 50000 {
		var b strings.Builder
		for range rng.IntN(16) {
			if rng.IntN(4) == 0 {
				b.WriteString("<@")
				continue
			}
			i := rng.IntN(len(alphabet))
			b.WriteString(alphabet[i : i+1])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, want := stripMentions(s), mentionPattern.ReplaceAllString(s, ""); got != want {
			t.Fatalf("stripMentions(%q) = %q, the regexp gives %q", s, got, want)
		}
		if _, _, got := nextMention(s, 0); got != mentionPattern.MatchString(s) {
			t.Fatalf("nextMention(%q) found %v, the regexp %v", s, got, !got)
		}
	}
}
