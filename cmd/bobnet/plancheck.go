package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bobnet/bobnet/planner"
)

// defaultProfiles are the assignee names plan check knows without
// --profiles: the four built-in profiles.
const defaultProfiles = "Coder,Planner,Researcher,Reviewer"

// runPlanCheck is `bobnet plan check [--profiles A,B] [--board] [FILE|-]`:
// it validates one raw model output and prints one JSON object. Exit 0
// valid, 1 invalid, 2 usage or I/O error.
func runPlanCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bobnet plan check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profiles := fs.String("profiles", defaultProfiles, "comma-separated assignee profile names")
	hasBoard := fs.Bool("board", false, "the channel has a current board, so create_card and create_card_batch may target it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bobnet plan check [--profiles A,B] [--board] [FILE|-]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	var raw []byte
	var err error
	switch name := fs.Arg(0); name {
	case "", "-":
		// Read one byte past the cap so an oversized input is reported as
		// too large by the parser rather than silently truncated.
		raw, err = io.ReadAll(io.LimitReader(stdin, planner.MaxRawOutput+1))
	default:
		raw, err = readCapped(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bobnet plan check: %v\n", err)
		return 2
	}
	res := planner.Check(raw, planner.Options{Profiles: splitList(*profiles), HasTargetBoard: *hasBoard})
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "bobnet plan check: %v\n", err)
		return 2
	}
	if !res.Valid {
		return 1
	}
	return 0
}

func readCapped(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, planner.MaxRawOutput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", strings.TrimSpace(name), err)
	}
	return b, nil
}
