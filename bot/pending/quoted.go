package pending

import "github.com/bobnet/bobnet/planner"

// appendQuoted writes a request's quoted thread messages (bot.Request's
// "quoted") as encoding/json writes them, for appendRequest; sep is the
// request's field separator.
func appendQuoted(b []byte, sep *byte, turns []planner.Turn) []byte {
	if len(turns) == 0 {
		return b
	}
	if *sep != 0 {
		b = append(b, *sep)
	}
	*sep = ','
	b = append(b, `"quoted":[`...)
	for i := range turns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Role":`...)
		b = appendJSONString(b, turns[i].Role)
		b = append(b, `,"User":`...)
		b = appendJSONString(b, turns[i].User)
		b = append(b, `,"Text":`...)
		b = appendJSONString(b, turns[i].Text)
		b = append(b, '}')
	}
	return append(b, ']')
}

// quotedSize is the bytes of a request's quoted messages, for recordSize.
func quotedSize(turns []planner.Turn) int {
	n := 0
	for i := range turns {
		n += 32 + len(turns[i].Role) + len(turns[i].User) + len(turns[i].Text)
	}
	return n
}
