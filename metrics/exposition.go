package metrics

import (
	"bytes"
	"io"
	"strconv"
	"strings"
)

// family is one series family as the exposition describes it.
type family struct {
	name, kind, help string
}

// BobNet's families. The library writes "# HELP name" without a text;
// writeWithHelp adds these.
var (
	requestsFamily = family{"bobnet_requests_total", "counter",
		"Requests by source and outcome: the reply kind once answered (answer, clarify, refuse, proposal, error), or why one was never queued (duplicate, rate_limited, invalid, unavailable)."}
	proposalsFamily = family{"bobnet_proposals_total", "counter",
		"Proposals by outcome: created, approved, cancelled, expired, superseded."}
	planningFamily = family{"bobnet_planner_duration_seconds", "histogram",
		"Time one planning call took (model calls and the repair retry included), by outcome: the plan's kind, or invalid, timeout, unreachable."}
	commitFamily = family{"bobnet_approve_to_commit_seconds", "histogram",
		"Time from an approval arriving to its board being committed in Postgres."}
	tokensFamily = family{"bobnet_model_tokens_total", "counter",
		"Model tokens spent, by the source of the channel that spent them (slack, matrix, console): the server's usage, or an estimate of four characters a token when it sends none. Per channel: GET /api/v1/usage."}
	runsFamily = family{"bobnet_runs_total", "counter",
		"Runs of boards by how they ended: done, stopped, timed_out."}
	runCardFamily = family{"bobnet_run_card_seconds", "histogram",
		"Time a runner took to work one card of a run (the model's call included)."}
	queueDepthFamily = family{"bobnet_queue_depth", "gauge",
		"Requests in the shared queue: waiting for a worker, or in_flight with one."}
)

// helpTexts maps a family in the set to its help text.
var helpTexts = func() map[string]string {
	h := map[string]string{}
	for _, f := range []family{requestsFamily, proposalsFamily, planningFamily, commitFamily, tokensFamily, runsFamily, runCardFamily} {
		h[f.name] = f.help
	}
	return h
}()

// labelEscaper escapes a label value as the text format wants: a
// backslash, a double quote and a line feed are the only escapes.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// helpEscaper escapes a help text: only backslash and line feed.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// series names one series: the family's name and its label pairs (name,
// value, name, value…), in the order given. Values are from the bounded
// sets of labels.go; they are made valid UTF-8 and escaped all the same.
func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(strings.ToValidUTF8(labels[i+1], "\uFFFD")))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// writeWithHelp copies the set's exposition to w, giving each bare
// "# HELP name" line of a family of BobNet's its help text.
func writeWithHelp(w io.Writer, exposition []byte) {
	for line := range bytes.Lines(exposition) {
		if rest, ok := bytes.CutPrefix(line, []byte("# HELP ")); ok {
			name := string(bytes.TrimSuffix(rest, []byte("\n")))
			if help, ok := helpTexts[name]; ok {
				writeHelp(w, family{name: name, help: help})
				continue
			}
		}
		_, _ = w.Write(line)
	}
}

func writeHelp(w io.Writer, f family) {
	_, _ = io.WriteString(w, "# HELP "+f.name+" "+helpEscaper.Replace(f.help)+"\n")
}

// writeHeader writes a family's # HELP and # TYPE lines.
func writeHeader(w io.Writer, f family) {
	writeHelp(w, f)
	_, _ = io.WriteString(w, "# TYPE "+f.name+" "+f.kind+"\n")
}

// writeSample writes one integer sample of a series.
func writeSample(w io.Writer, series string, v int64) {
	_, _ = io.WriteString(w, series+" "+strconv.FormatInt(v, 10)+"\n")
}
