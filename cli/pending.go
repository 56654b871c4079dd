package cli

import "github.com/spf13/cobra"

// Commands over the jobs, state and mapping packages; they land with those packages.

func (a *app) pending(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short + " (not yet)",
		RunE:  a.run(func(*cobra.Command, []string) error { return errNotYet }),
	}
}

func (a *app) migrateCommand() *cobra.Command {
	return a.pending("migrate", "Create or upgrade the database")
}
func (a *app) runCommand() *cobra.Command { return a.pending("run", "Run the worker") }
func (a *app) importCommand() *cobra.Command {
	return a.pending("import FILE", "Queue a one-off import")
}
func (a *app) syncCommand() *cobra.Command {
	return a.pending("sync NAME", "Queue a configured sync now")
}
func (a *app) statusCommand() *cobra.Command { return a.pending("status", "Subscriber status pull") }
func (a *app) runsCommand() *cobra.Command   { return a.pending("runs [ID]", "Run history") }
