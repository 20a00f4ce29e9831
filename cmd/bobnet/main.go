// Command bobnet is the BobNet service and its tools:
//
//	bobnet plan check [FILE|-]   parse and validate one raw model output
//
// Settings come from the environment; flags of the same meaning override
// them.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  bobnet plan check [--profiles A,B] [--board] [FILE|-]
                                        validate one raw model output
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bobnet: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
