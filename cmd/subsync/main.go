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
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
