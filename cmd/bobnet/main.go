// Command bobnet is the BobNet service and its tools:
//
//	bobnet serve                 serve the console, API and adapters
//	bobnet migrate               apply the database migrations
//	bobnet plan check [FILE|-]   parse and validate one raw model output
//	bobnet token create|list|revoke  manage API tokens
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
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  bobnet serve [flags]                  serve the console, API and adapters
  bobnet migrate [flags]                apply the database migrations
  bobnet plan check [--profiles A,B] [--board] [FILE|-]
                                        validate one raw model output
  bobnet token create NAME --scopes read,propose [--user U]
  bobnet token list | bobnet token revoke NAME
                                        manage API tokens
`

// run dispatches a subcommand and returns the process exit code.
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
		fs := flag.NewFlagSet("bobnet "+args[0], flag.ContinueOnError)
		fs.SetOutput(stderr)
		cfg, err := loadConfig(fs, args[1:], os.Getenv)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(stderr, "bobnet %s: invalid configuration:\n%v\n", args[0], err)
			return 2
		}
		logger := slog.New(slog.NewTextHandler(stderr, nil))
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if args[0] == "migrate" {
			err = runMigrate(ctx, cfg, logger)
		} else {
			err = runServe(ctx, cfg, logger)
		}
		if err != nil {
			logger.Error(args[0]+" failed", "err", err)
			return 1
		}
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bobnet: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
