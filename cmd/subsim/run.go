package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/subsync/subsync/sink/sinktest"
)

// Exit codes: a usage error is not worth restarting for.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a bad command line; the process exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// config is the command line of subsim.
type config struct {
	addr, user, key string
	faults          sinktest.Faults
	statusWrapped   bool
	plain401        bool
	activeRevives   bool
	// The alternatives the evidence about the real service allows (docs/service.md).
	statusPaged     int
	statusLinkPaged int
	statusCap       int
	statusDays      bool
	statusFromQuery bool
	listIDArrayOnly bool
	putOnly         bool
	rowMessages     bool
	omitRevives     bool
	byListAll       bool
	consentBooleans bool
	genderValues    string
	multipleArrays  bool
}

// parse reads the command line; the key comes from --key or else SUBSIM_KEY.
func parse(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	var c config
	fs := flag.NewFlagSet("subsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks a free port)")
	fs.StringVar(&c.user, "user", "", "user id the Basic auth must carry (required)")
	fs.StringVar(&c.key, "key", "", "API key the Basic auth must carry (default $SUBSIM_KEY)")
	fs.Int64Var(&c.faults.Seed, "seed", 1, "seed of the fault decisions")
	fs.DurationVar(&c.faults.Latency, "latency", 0, "latency added to every request")
	fs.Float64Var(&c.faults.ErrorRate, "error-rate", 0, "fraction of requests answered 500/502/503")
	fs.Float64Var(&c.faults.TooManyRate, "429-rate", 0, "fraction of requests answered 429")
	fs.DurationVar(&c.faults.RetryAfter, "retry-after", time.Second, "Retry-After of a random 429")
	fs.Float64Var(&c.faults.MaxRPS, "max-rps", 0, "requests per second over which 429 is answered (0: no cap)")
	fs.Float64Var(&c.faults.DropRate, "drop-rate", 0, "fraction of requests whose connection is cut mid-response")
	fs.BoolVar(&c.statusWrapped, "status-wrapped", false, `answer /subscriberstatus as {"changes":[...]}`)
	fs.BoolVar(&c.plain401, "plain-401", false, "answer 401 with a plain-text body")
	fs.BoolVar(&c.activeRevives, "active-revives", false, "let bulkinsert status=active revive unsubscribed/bounced")
	fs.IntVar(&c.statusPaged, "status-paged", 0, `answer /subscriberstatus N entries a page, {"data":[...],"meta":{...},"links":{"next":URL}} (0: one answer)`)
	fs.IntVar(&c.statusLinkPaged, "status-link-paged", 0, `answer /subscriberstatus N entries a page, a bare array, the next page named only in a Link header (0: one answer)`)
	fs.IntVar(&c.statusCap, "status-cap", 0, "answer /subscriberstatus at most N entries, the oldest, with no paging hint (0: no cap)")
	fs.BoolVar(&c.statusDays, "status-days", false, "read /subscriberstatus from_date and to_date as whole days")
	fs.BoolVar(&c.statusFromQuery, "status-from-query", false, "read a single create's status only from the query, not the body")
	fs.BoolVar(&c.listIDArrayOnly, "list-id-array-only", false, "name lists only by subscriber_list_id[] (a bare subscriber_list_id is ignored)")
	fs.BoolVar(&c.putOnly, "put-only", false, "refuse PATCH with 405: updates take PUT")
	fs.BoolVar(&c.rowMessages, "row-messages", false, `add "message":"row N: reason" to a 422 (default: exactly {"status":"422 Unprocessable entity"})`)
	fs.BoolVar(&c.omitRevives, "omission-revives", false, "let a push without a status (bulk or single) revive unsubscribed/bounced, as the seed says of single create")
	fs.BoolVar(&c.byListAll, "by-list-ignores-status", false, "answer /subscribers/by_list with every subscriber whatever status is asked for")
	fs.BoolVar(&c.consentBooleans, "consent-booleans", false, "take consent fields (SAMTYKKEEPOST, …) only as true or false")
	fs.StringVar(&c.genderValues, "gender-values", "", `take only these gender values, comma-separated (e.g. "`+strings.Join(sinktest.SwitchGenders, ",")+`"; empty: any)`)
	fs.BoolVar(&c.multipleArrays, "multiple-choice-arrays", false, "take multiple_choice values only as arrays of strings")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return c, usagef("unexpected argument %q", fs.Arg(0))
	}
	if c.key == "" {
		c.key = getenv("SUBSIM_KEY")
	}
	switch {
	case c.user == "":
		return c, usagef("--user is required")
	case c.key == "":
		return c, usagef("--key or SUBSIM_KEY is required")
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"error-rate", c.faults.ErrorRate}, {"429-rate", c.faults.TooManyRate}, {"drop-rate", c.faults.DropRate}} {
		if r.v < 0 || r.v > 1 {
			return c, usagef("--%s must be between 0 and 1, got %g", r.name, r.v)
		}
	}
	if c.statusPaged < 0 || c.statusCap < 0 || c.statusLinkPaged < 0 {
		return c, usagef("--status-paged, --status-link-paged and --status-cap must not be negative")
	}
	if c.faults.MaxRPS < 0 || c.faults.Latency < 0 || c.faults.RetryAfter < 0 {
		return c, usagef("--max-rps, --latency and --retry-after must not be negative")
	}
	return c, nil
}

// run serves the emulator until ctx ends. It prints the v2 and v3 base URLs on stdout, one
// per line ("v2 http://…/api/public/v2", "v3 http://…/api/v3"), and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c, err := parse(args, stderr, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	var genders []string
	if c.genderValues != "" {
		genders = strings.Split(c.genderValues, ",")
	}
	em := sinktest.New(
		sinktest.WithCredentials(c.user, c.key),
		sinktest.WithFaults(c.faults),
		sinktest.WithStatusWrapped(c.statusWrapped),
		sinktest.WithPlainText401(c.plain401),
		sinktest.WithActiveRevives(c.activeRevives),
		sinktest.WithStatusPaged(c.statusPaged),
		sinktest.WithStatusLinkPaged(c.statusLinkPaged),
		sinktest.WithStatusDays(c.statusDays),
		sinktest.WithStatusCap(c.statusCap),
		sinktest.WithStatusFromQuery(c.statusFromQuery),
		sinktest.WithListIDArrayOnly(c.listIDArrayOnly),
		sinktest.WithPutOnly(c.putOnly),
		sinktest.WithRowMessages(c.rowMessages),
		sinktest.WithOmissionRevives(c.omitRevives),
		sinktest.WithByListIgnoresStatus(c.byListAll),
		sinktest.WithConsentBooleans(c.consentBooleans),
		sinktest.WithMultipleChoiceArrays(c.multipleArrays),
		sinktest.WithGenderValues(genders...),
		sinktest.WithLogger(logger),
	)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	base := "http://" + ln.Addr().String()
	if _, err := fmt.Fprintf(stdout, "v2 %s%s\nv3 %s%s\n", base, sinktest.V2Prefix, base, sinktest.V3Prefix); err != nil {
		ln.Close()
		return fmt.Errorf("print addresses: %w", err)
	}
	logger.InfoContext(ctx, "subsim listening", slog.String("addr", ln.Addr().String()), slog.String("user", c.user),
		slog.Int64("seed", c.faults.Seed), slog.Duration("latency", c.faults.Latency),
		slog.Float64("error_rate", c.faults.ErrorRate), slog.Float64("too_many_rate", c.faults.TooManyRate),
		slog.Float64("max_rps", c.faults.MaxRPS), slog.Float64("drop_rate", c.faults.DropRate))
	if err := em.Serve(ctx, ln); err != nil {
		return err
	}
	logger.InfoContext(context.WithoutCancel(ctx), "subsim stopped")
	return nil
}
