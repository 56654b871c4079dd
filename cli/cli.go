// Package cli is subsync's command line: every command of the `subsync` binary, driven by
// [Main] with the arguments, standard streams and a context, so tests run it in-process
// exactly as the binary does.
//
// Contract with scripts and service managers:
//
//   - Exit codes: [ExitOK] (0) success; [ExitFailure] (1) the command ran and failed (a run
//     failed, the service refused a request, a row was rejected by `subscribers upsert`, …);
//     [ExitUsage] (2) the command could not start: bad arguments or flags, an invalid
//     configuration file, a missing confirmation. A service manager should not restart on 2.
//   - Standard output carries results only: tables, or JSON with --json. Standard error
//     carries logs (log/slog: text on a terminal, JSON otherwise; --log-format), prompts and
//     the final error line ("subsync: …").
//   - Deletes ask for confirmation (y/N on stdin) unless --yes is given; without a terminal
//     on stdin and without --yes they refuse with exit code 2.
//   - Secrets (the API key, database passwords) never appear in output, logs or errors.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/sink"
)

// Exit codes of the subsync binary.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and failed
	// ExitUsage: bad usage or invalid configuration, the command did not start; a service
	// manager should not restart it (systemd: RestartPreventExitStatus=2). The Go runtime
	// also exits 2 on a fatal error (out of memory, stack overflow): telling the two apart
	// is open (issue 19, point 7).
	ExitUsage = 2
)

// Main runs the subsync command line with args (without the program name) and returns the
// process exit code. Environment variables are read with os.Getenv.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := newApp(stdin, stdout, stderr)
	return a.main(ctx, args)
}

// app is one invocation of the command line.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// isTerminal reports whether a stream is an interactive terminal; tests replace it.
	isTerminal func(any) bool
	version    string

	// Global flags.
	configPath string
	logFormat  string
	logLevel   string
	// serviceTimeout bounds an interactive command's calls to the service.
	serviceTimeout time.Duration

	root    *cobra.Command
	log     *slog.Logger
	term    *terminalLine // stderr when it is a terminal: the logs and the progress bar share its last line
	cfg     *config.Config
	looked  []string // where config looked for a file, when it found none
	started bool     // a command's RunE began: errors from here on are not usage errors
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{
		stdin: stdin, stdout: stdout, stderr: stderr,
		getenv:     os.Getenv,
		isTerminal: isTerminal,
		version:    buildVersion(),
		log:        slog.New(slog.DiscardHandler),
	}
}

func (a *app) main(ctx context.Context, args []string) int {
	a.root = a.rootCommand()
	a.root.SetArgs(args)
	a.root.SetIn(a.stdin)
	a.root.SetOut(a.stdout)
	a.root.SetErr(a.stderr)
	cmd, err := a.root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := a.exitCode(err)
	err = withSuggestion(cmd, err)
	var apiErr *sink.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized && !strings.Contains(err.Error(), credentialHint) {
		err = fmt.Errorf("%w (%s)", err, credentialHint)
	}
	prev := ""
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		if line == prev {
			continue // a driver that tried twice the same way (pgx: one line per attempt)
		}
		prev = line
		fmt.Fprintf(a.stderr, "subsync: %s\n", line)
	}
	if code == ExitUsage && !a.started && cmd != nil {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// exitCode classifies an error: usage and configuration problems are ExitUsage, anything
// else that happened once a command ran is ExitFailure.
func (a *app) exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	switch {
	case !a.started, errors.As(err, &ue), errors.As(err, &ce),
		errors.Is(err, sink.ErrNoLegacyURL), errors.Is(err, sink.ErrInvalidConfig):
		return ExitUsage
	}
	return ExitFailure
}

var unknownCommandRE = regexp.MustCompile(`^unknown command "([^"]*)" for`)

// withSuggestion adds "did you mean …?" to an unknown (sub)command, as cobra does only for
// the root with arbitrary arguments.
func withSuggestion(cmd *cobra.Command, err error) error {
	m := unknownCommandRE.FindStringSubmatch(err.Error())
	if m == nil || cmd == nil || strings.Contains(err.Error(), "Did you mean") {
		return err
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(m[1]); len(s) > 0 {
		return fmt.Errorf("%w (did you mean %s?)", err, strings.Join(s, " or "))
	}
	return err
}

// usageError marks an error as the user's to fix before the command can run (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// run wraps a command body: from here on, errors are failures unless marked as usage.
func (a *app) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		return fn(cmd, args)
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "subsync",
		Short: "Keep newsletter subscriber lists in step with CSV, Excel and SQL contacts",
		Long: `subsync imports contacts from CSV files, Excel workbooks and SQL databases into a
newsletter subscriber service in 1000-row batches, runs scheduled syncs as queued jobs, and
pulls unsubscribes and bounces back so that nobody who left is ever made active again.

Exit codes: 0 success, 1 the command ran and failed, 2 usage or configuration error.
Results go to standard output (tables, or JSON with --json); logs, prompts and errors go
to standard error.

Secrets come from the environment, which wins over the configuration file:
SUBSYNC_API_KEY, SUBSYNC_USER_ID, SUBSYNC_DATABASE_URL.`,
		Example: `  subsync config check
  subsync lists ls
  subsync import contacts.csv --list 12 --wait
  subsync run`,
		Version:           a.version,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Args:              cobra.NoArgs,
		PersistentPreRunE: a.setup,
		RunE:              showHelp,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.configPath, "config", "c", "", "configuration file (TOML); default: $SUBSYNC_CONFIG, else the first of "+
		"./subsync.toml, $XDG_CONFIG_HOME/subsync/subsync.toml, "+config.SystemPath+" that exists")
	pf.StringVar(&a.logFormat, "log-format", "auto", "log format on stderr: auto (text on a terminal, JSON otherwise), text or json")
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.DurationVar(&a.serviceTimeout, "service-timeout", serviceTimeoutDefault,
		"how long an interactive command (lists ls, import --wait, preview --sync) waits for the service before it gives up")

	root.AddCommand(
		a.configCommand(),
		a.doctorCommand(),
		a.listsCommand(),
		a.fieldsCommand(),
		a.subscribersCommand(),
		a.previewCommand(),
		a.migrateCommand(),
		a.runCommand(),
		a.uiCommand(),
		a.schedulesCommand(),
		a.importCommand(),
		a.syncCommand(),
		a.statusCommand(),
		a.forgetCommand(),
		a.runsCommand(),
		a.pruneCommand(),
		a.jobsCommand(),
		a.tokensCommand(),
		a.demoCommand(),
		a.versionCommand(),
	)
	return root
}

// group returns a command that only holds subcommands: alone it prints its help, with an
// unknown subcommand it is a usage error.
func group(use, short, example string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    cobra.NoArgs,
		RunE:    showHelp,
	}
}

func showHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// setup runs before every command: it builds the logger from the global flags.
func (a *app) setup(cmd *cobra.Command, _ []string) error {
	terminal := a.isTerminal(a.stderr)
	w := a.stderr
	if terminal {
		a.term = &terminalLine{w: a.stderr}
		w = a.term
	}
	log, err := newLogger(w, a.logFormat, a.logLevel, terminal)
	if err != nil {
		return &usageError{err}
	}
	a.log = log
	return nil
}

// config loads the configuration once, from the file [config.Find] finds. With no file
// found, the configuration comes from defaults and the environment alone (enough to call the
// service); commands that keep state refuse to run without a file (see jobsConfig).
func (a *app) config() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	path, looked, err := config.Find(a.configPath, a.getenv)
	if err != nil {
		return nil, &usageError{err}
	}
	var cfg *config.Config
	if path == "" {
		a.looked = looked
		a.log.Debug("no configuration file: using defaults and the environment", slog.Any("looked_in", looked))
		cfg, err = config.Parse("", nil, a.getenv)
	} else {
		cfg, err = config.Load(path, a.getenv)
	}
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	a.cfg = cfg
	return cfg, nil
}

// errNoConfig is the usage error of a command that keeps state (the queue, run history)
// when no configuration file was found: it never creates a data directory on a guess.
func (a *app) errNoConfig() error {
	return usagef("no configuration file found (looked in %s): this command keeps its queue and run history "+
		"in the database of a configuration; create one (cp config.example.toml subsync.toml), or name it with "+
		"--config FILE or %s", strings.Join(a.looked, ", "), config.EnvConfig)
}

// client returns a subscriber service client for the configuration, for a command a person
// waits for (the worker's client is made by jobs).
func (a *app) client() (*sink.Client, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckCredentials(); err != nil {
		return nil, err
	}
	sc := cfg.SinkConfig()
	sc.Logger = a.log
	sc.Version = a.version
	// A person waits for this command: no call of it, retries included, takes much longer
	// than --service-timeout (lists ls, import and preview bound their calls exactly).
	if a.serviceTimeout > 0 && (sc.Timeout == 0 || sc.Timeout > a.serviceTimeout) {
		sc.Timeout = a.serviceTimeout
	}
	if a.serviceTimeout > 0 && (sc.MaxRetryTime == 0 || sc.MaxRetryTime > a.serviceTimeout) {
		sc.MaxRetryTime = a.serviceTimeout
	}
	c, err := sink.New(sc)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// revision is the VCS revision when the build info has none, set by the linker:
//
//	go build -ldflags "-X github.com/subsync/subsync/cli.revision=$(git rev-parse HEAD)" ./cmd/subsync
//
// Go stamps the revision itself (-buildvcs) only when building in a git checkout whose .git
// is a directory, with git installed and GOFLAGS not holding -buildvcs=false; a git worktree
// (.git a file), a source tarball or a Docker build context without .git get none.
var revision string

func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		rev = revision
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of subsync: module version and VCS revision",
		Long: `Print the version of subsync, then the module version and the VCS revision (with its
time, and "modified" for a build from a changed work tree) from the binary's build info.`,
		Example: `  subsync version`,
		Args:    cobra.NoArgs,
		RunE: a.run(func(*cobra.Command, []string) error {
			var b strings.Builder
			fmt.Fprintln(&b, "subsync", a.version)
			if info, ok := debug.ReadBuildInfo(); ok {
				fmt.Fprintf(&b, "module:   %s %s\n", info.Main.Path, cmp.Or(info.Main.Version, "(unknown)"))
				settings := map[string]string{}
				for _, s := range info.Settings {
					settings[s.Key] = s.Value
				}
				rev := cmp.Or(settings["vcs.revision"], revision, "unknown (built without VCS information; see the README, Installing)")
				if t := settings["vcs.time"]; t != "" {
					rev += " (" + t + ")"
				}
				if settings["vcs.modified"] == "true" {
					rev += " modified"
				}
				fmt.Fprintf(&b, "revision: %s\n", rev)
				fmt.Fprintf(&b, "go:       %s\n", info.GoVersion)
			}
			_, err := fmt.Fprint(a.stdout, b.String())
			return err
		}),
	}
}
