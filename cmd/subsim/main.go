// Command subsim serves the subscriber service emulator (package sink/sinktest) on a local
// address, for development and for testing subsync by hand:
//
//	SUBSIM_KEY=K subsim --addr 127.0.0.1:8080 --user U [--seed N --latency D --error-rate F
//	    --429-rate F --retry-after D --max-rps F --drop-rate F --status-wrapped --plain-401 --active-revives]
//
// It prints its v2 and v3 base URLs, logs each request, and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	var usage *usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "subsim:", err)
		os.Exit(exitUsage)
	default:
		fmt.Fprintln(os.Stderr, "subsim:", err)
		os.Exit(exitFailure)
	}
}
