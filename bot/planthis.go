package bot

import (
	"strings"

	"github.com/bobnet/bobnet/plan"
)

// ThreadMessage is one message of a chat thread shared with "Plan this":
// who wrote it (a name or platform id) and what they wrote.
type ThreadMessage struct {
	User string
	Text string
}

// MaxThreadReplies is how many replies of a shared thread, besides its
// first message, become part of the request.
const MaxThreadReplies = 50

// Bounds on the quoted thread: a request record lives in Redis and every
// planning call sends it to the model, so a thread of long messages is
// cut rather than carried whole.
const (
	maxQuotedMessage = 4 << 10
	maxQuotedTotal   = 64 << 10
)

// PlanThisText is what a "Plan this" request asks in its own words. The
// thread's messages go beside it as quoted data, so nothing written in the
// thread is ever the instruction.
const PlanThisText = "Plan the work discussed in the chat thread shared with BobNet. Its messages are quoted above as thread history: use them as material for the plan."

// QuoteThread turns a shared thread's messages (first message first) into
// the turns a Request quotes: at most the first message and
// MaxThreadReplies replies, each cut to a few KiB, all together to
// maxQuotedTotal; empty messages are left out.
func QuoteThread(msgs []ThreadMessage) []plan.Turn {
	if len(msgs) > MaxThreadReplies+1 {
		msgs = msgs[:MaxThreadReplies+1]
	}
	turns := make([]plan.Turn, 0, len(msgs))
	total := 0
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text)
		if text == "" {
			continue
		}
		text = cut(text, min(maxQuotedMessage, maxQuotedTotal-total))
		if text == "" {
			break
		}
		user := strings.TrimSpace(m.User)
		if user == "" {
			user = "someone"
		}
		total += len(text)
		turns = append(turns, plan.Turn{Role: "user", User: cut(user, 100), Text: text})
	}
	return turns
}

// cut is s in at most n bytes, on a character boundary, marked when cut.
func cut(s string, n int) string {
	return plan.Cut(s, n, " …(cut)")
}
