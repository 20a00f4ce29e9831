// Command bobnet is the BobNet service and its tools:
//
//	bobnet serve                 serve the console, API and adapters
//	bobnet migrate               apply the database migrations
//	bobnet plan check [FILE|-]   parse and validate one raw model output
//	bobnet token create|list|revoke  manage API tokens
//	bobnet config vars           list the environment variables serve reads
//	bobnet config doc            print the configuration reference
//	bobnet version               print the version
//	bobnet demo-model            a canned stand-in for a model server (make demo)
//
// Settings come from the environment; flags of the same meaning override
// them (bobnet serve -h lists them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/bobnet/bobnet/app"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  bobnet serve [flags]                  serve the console, API and adapters
  bobnet migrate [flags]                apply the database migrations
  bobnet plan check [--profiles A,B] [--board|--no-board] [FILE|-]
                                        validate one raw model output
  bobnet config vars                    list the environment variables serve reads
                                        ("secret" beside those to keep in a secret store)
  bobnet config doc                     print the configuration reference (Markdown)
  bobnet version                        print the version
  bobnet demo-model [--listen ADDR] [--articles DIR] [DIR]
                                        a canned stand-in for a model server, for
                                        trying BobNet without one (make demo)
  bobnet token create NAME --scopes read,propose [--user U] [--channels 'slack:T0ONE/*,console:*']
  bobnet token list | bobnet token revoke NAME
                                        manage API tokens (--channels: only those channels)

bobnet serve -h lists every setting.
`

// run dispatches a subcommand and returns the process exit code: 0 done,
// 1 failed, 2 usage or configuration error.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "plan":
		if len(args) < 2 || args[1] != "check" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return runPlanCheck(args[2:], stdin, stdout, stderr)
	case "token":
		return runToken(args[1:], os.Getenv, stdout, stderr)
	case "serve", "migrate":
		return runService(args[0], args[1:], stdout, stderr)
	case "demo-model":
		return runDemoModel(args[1:], stdout, stderr)
	case "config":
		if len(args) == 2 && args[1] == "doc" {
			fmt.Fprint(stdout, app.ConfigDoc())
			return 0
		}
		if len(args) != 2 || args[1] != "vars" {
			fmt.Fprintf(stderr, "bobnet config: unknown command %q\n%s", args[1:], usage)
			return 2
		}
		// One variable a line; those holding a secret (or a URL that may
		// carry a password) say so, for deployments to keep them in
		// secret stores.
		for _, v := range app.ConfigVars() {
			if v.Secret {
				fmt.Fprintf(stdout, "%s secret\n", v.Env)
			} else {
				fmt.Fprintln(stdout, v.Env)
			}
		}
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bobnet: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// runService is `bobnet serve` and `bobnet migrate`: read and check the
// configuration, then run until done or interrupted.
func runService(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bobnet "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		fs.SetOutput(stdout) // asked for: help is the output
	}
	cfg, err := app.LoadConfig(fs, args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = cfg.RequireServices(cmd == "serve")
	}
	if err != nil {
		// A flag the flag package rejected has been reported already,
		// with the usage; the settings' problems are listed one a line,
		// the same block whether a variable is missing or wrong.
		if problems, ok := app.ConfigProblems(err); ok {
			fmt.Fprintf(stderr, "bobnet %s: invalid configuration:\n", cmd)
			for _, p := range problems {
				fmt.Fprintf(stderr, "  %s\n", p)
			}
		}
		return 2
	}
	logger := app.NewLogger(stderr, cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cmd == "migrate" {
		err = app.Migrate(ctx, cfg, logger)
	} else {
		err = app.Run(ctx, cfg, logger)
	}
	if err != nil {
		// A person at a terminal reads text logs: give them the error as
		// a plain line. Log collectors get it as a JSON record.
		if cfg.LogFormat == "json" {
			logger.Error(cmd+" failed", "err", err)
		} else {
			fmt.Fprintf(stderr, "bobnet %s: %s\n", cmd, cfg.Scrubber()(err.Error()))
		}
		return 1
	}
	return 0
}

// version describes this build: the module version and, when built from a
// checkout, the commit.
func version() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(info)
}

// versionOf formats what the build stamped: `go build` in a git checkout
// stamps a pseudo-version that already ends in the commit, so the commit is
// added only where the version does not name it.
func versionOf(info *debug.BuildInfo) string {
	v, rev, dirty := "(devel)", "", false
	if info == nil {
		return "bobnet " + v
	}
	if info.Main.Version != "" {
		v = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	out := "bobnet " + v
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && !strings.Contains(v, rev) {
		out += " " + rev
		if dirty {
			out += "+dirty"
		}
	}
	return out + " " + info.GoVersion
}
