package bot_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bobnet/bobnet/bot"
)

func TestQuoteThread(t *testing.T) {
	var long []bot.ThreadMessage
	for i := range 80 {
		long = append(long, bot.ThreadMessage{User: fmt.Sprintf("U%d", i), Text: fmt.Sprintf("message %d", i)})
	}
	turns := bot.QuoteThread(long)
	if len(turns) != bot.MaxThreadReplies+1 || turns[0].Text != "message 0" || turns[0].User != "U0" || turns[0].Role != "user" {
		t.Fatalf("80 messages became %d turns, first %+v", len(turns), turns[0])
	}

	turns = bot.QuoteThread([]bot.ThreadMessage{{User: "", Text: "  "}, {User: "", Text: "who?"}, {User: "U1", Text: strings.Repeat("é", 10_000)}})
	if len(turns) != 2 || turns[0].User != "someone" {
		t.Fatalf("turns = %+v", turns)
	}
	if cut := turns[1].Text; len(cut) > 4<<10 || !strings.HasSuffix(cut, "…(cut)") || !utf8.ValidString(cut) {
		t.Fatalf("a long message was not cut on a character boundary: %d bytes, valid %v", len(cut), utf8.ValidString(cut))
	}

	var big []bot.ThreadMessage
	for range 51 {
		big = append(big, bot.ThreadMessage{User: "U1", Text: strings.Repeat("x", 4<<10)})
	}
	total := 0
	for _, tu := range bot.QuoteThread(big) {
		total += len(tu.Text)
	}
	if total > 64<<10 {
		t.Fatalf("quoted %d bytes, more than 64 KiB", total)
	}
}
