package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/plan"
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
	hasBoard := fs.Bool("board", false, "the channel has a current board, so card actions may target it")
	noBoard := fs.Bool("no-board", false, "the channel has no current board, so card actions are errors")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bobnet plan check [--profiles A,B] [--board|--no-board] [FILE|-]")
		fmt.Fprintln(fs.Output(), "Without --board or --no-board, card actions that need the channel's current board are warnings.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 1 || (*hasBoard && *noBoard) {
		fmt.Fprintln(stderr, "bobnet plan check: give one FILE at most, and --board or --no-board, not both")
		fs.Usage()
		return 2
	}
	var raw []byte
	var err error
	switch name := fs.Arg(0); name {
	case "", "-":
		if isTerminal(stdin) {
			fmt.Fprintln(stderr, "bobnet plan check: reading the model output from standard input (end it with Ctrl-D)")
		}
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
	opts := plan.Options{Profiles: app.SplitList(*profiles), HasTargetBoard: *hasBoard}
	var res plan.Result
	if *hasBoard || *noBoard {
		res = planner.Check(raw, opts)
	} else {
		res = checkEitherBoard(raw, opts)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // read on a terminal, not embedded in HTML
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

// checkEitherBoard validates raw as if the channel had a current board and
// reports, as warnings, the errors it would have without one: offline
// there is no channel to ask.
func checkEitherBoard(raw []byte, opts plan.Options) plan.Result {
	opts.HasTargetBoard = true
	res := planner.Check(raw, opts)
	opts.HasTargetBoard = false
	for _, e := range planner.Check(raw, opts).Errors {
		if !slices.Contains(res.Errors, e) {
			e.Message += " (a warning here: pass --board or --no-board to say whether the channel has one)"
			res.Warnings = append(res.Warnings, e)
		}
	}
	return res
}

// isTerminal reports whether r is a terminal, where a person might be
// waiting for a prompt that never comes.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
