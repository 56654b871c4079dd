package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// errNotYet is returned by commands whose implementation has not landed.
var errNotYet = errors.New("not yet implemented")

func (a *app) demoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Everything in one process: emulator, embedded queue and sample files (not yet)",
		Long: `Start the service emulator, an embedded queue and sample files in one process, and run
an import, a sync and a status pull against them. Not yet implemented.`,
		Example: `  subsync demo`,
		Args:    cobra.NoArgs,
		RunE: a.run(func(*cobra.Command, []string) error {
			return errNotYet
		}),
	}
}
