package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/config"
)

func (a *app) configCommand() *cobra.Command {
	cmd := group("config", "Check or show the configuration", `  subsync config check
  subsync --config /etc/subsync.toml config show --json`)

	var online bool
	var samples string
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration without running anything",
		Long: `Validate the configuration file (and the environment overrides), mapping files and
secrets included, without contacting the service or the database. Every problem is listed,
each naming the key, the value and the reason; the exit code is 2 when there is any.
Missing credentials (api.user_id, the API key, usually from SUBSYNC_USER_ID and
SUBSYNC_API_KEY) are problems too, since run refuses to start without them.

With --online it then checks the service, read-only, as "subsync doctor" does (exit code 1
when the service is not set up as the configuration expects).`,
		Example: `  subsync config check
  subsync --config prod.toml config check`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			// Missing credentials fail the check: run refuses to start without them, and
			// config check rejects everything run would reject.
			if err := cfg.CheckCredentials(); err != nil {
				return err
			}
			if online {
				return a.doctor(cmd.Context(), samples)
			}
			where := cfg.Path
			if where == "" {
				where = "configuration (no file: defaults and environment)"
			}
			names := make([]string, len(cfg.Syncs))
			for i, s := range cfg.Syncs {
				names[i] = s.Name
			}
			syncs := "no syncs"
			if len(names) > 0 {
				syncs = fmt.Sprintf("%d sync(s): %s", len(names), strings.Join(names, ", "))
			}
			_, err = fmt.Fprintf(a.stdout, "%s: OK (%s)\n", where, syncs)
			return err
		}),
	}

	check.Flags().BoolVar(&online, "online", false, "also check the service, read-only, as subsync doctor does")
	check.Flags().StringVar(&samples, "save-samples", "", "with --online: write every response, personal data replaced, to this directory")

	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration, defaults filled and secrets redacted",
		Example: `  subsync config show
  subsync config show --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(*cobra.Command, []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(cfg)
			}
			_, err = fmt.Fprint(a.stdout, cfg.String())
			return err
		}),
	}
	jsonFlag(show, &asJSON)
	path := &cobra.Command{
		Use:   "path",
		Short: "Print the configuration file in use",
		Long: `Print the configuration file subsync reads: --config, else $SUBSYNC_CONFIG, else the first
of ./subsync.toml, $XDG_CONFIG_HOME/subsync/subsync.toml ($HOME/.config when unset) and
/etc/subsync/subsync.toml that exists. With none, it says where it looked and exits 2.`,
		Example: `  subsync config path`,
		Args:    cobra.NoArgs,
		RunE: a.run(func(*cobra.Command, []string) error {
			p, looked, err := config.Find(a.configPath, a.getenv)
			if err != nil {
				return &usageError{err}
			}
			if p == "" {
				return usagef("no configuration file found (looked in %s)", strings.Join(looked, ", "))
			}
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			_, err = fmt.Fprintln(a.stdout, p)
			return err
		}),
	}
	cmd.AddCommand(check, show, path)
	return cmd
}
