// Command subsync syncs contacts from CSV, XLSX and SQL sources into a newsletter
// subscriber service. See `subsync --help`; the commands live in package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // schedules' time zones work on hosts without a zoneinfo database

	"github.com/subsync/subsync/cli"
	"github.com/subsync/subsync/jobs"
)

func main() {
	jobs.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks the command to stop cleanly (a worker finishes or pauses its runs,
	// import --wait cancels its job); a second one ends the process at once.
	context.AfterFunc(ctx, stop)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
