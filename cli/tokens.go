package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/state"
)

// tokenJSON is a token as tokens create --json prints it: its value, this once.
type tokenJSON struct {
	Name     string `json:"name"`
	Token    string `json:"token"`
	ReadOnly bool   `json:"read_only"`
}

// tokenInfoJSON is a token as tokens ls --json lists it: never its value.
type tokenInfoJSON struct {
	Name      string     `json:"name"`
	ReadOnly  bool       `json:"read_only"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

func (a *app) tokensCommand() *cobra.Command {
	cmd := group("tokens", "The HTTP API's tokens: create, list, revoke", `  subsync tokens create crm
  subsync tokens create dashboard --read-only
  subsync tokens ls
  subsync tokens revoke crm`)
	cmd.Long = `The HTTP API (/api/v1 on the worker's listener, see docs/api.md) takes a request only with a
token: "Authorization: Bearer TOKEN". Each token has a name, which the log of every call
names (never the token itself); the database keeps only a hash of the token, so a token
lost cannot be shown again: revoke it and create another. A read-only token may only read
(GET); the others may also queue imports, syncs and erasures and cancel jobs.`

	var readOnly, asJSON bool
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a token and print it, once",
		Long: `Create a token named NAME and print it alone on standard output (or, with --json,
{"name": …, "token": …}). It is not shown again: the database keeps only its hash.
NAME is 1 to 64 letters, digits, '.', '_' or '-'; a name in use is refused (revoke the
token first), a revoked token's name may be used again.`,
		Example: `  subsync tokens create crm
  subsync tokens create dashboard --read-only --json
  TOKEN=$(subsync tokens create airflow)`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			token, err := rt.State().CreateAPIToken(ctx, args[0], readOnly)
			if errors.Is(err, state.ErrBadTokenName) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			a.log.InfoContext(ctx, "API token created", slog.String("token", args[0]), slog.Bool("read_only", readOnly))
			if asJSON {
				return a.printJSON(tokenJSON{Name: args[0], Token: token, ReadOnly: readOnly})
			}
			_, err = fmt.Fprintln(a.stdout, token)
			return err
		}),
	}
	create.Flags().BoolVar(&readOnly, "read-only", false, "the token may only read (GET)")
	jsonFlag(create, &asJSON)

	var lsJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tokens (names, never the tokens), revoked ones too",
		Example: `  subsync tokens ls
  subsync tokens ls --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			list, err := rt.State().APITokens(ctx)
			if err != nil {
				return err
			}
			if lsJSON {
				out := make([]tokenInfoJSON, len(list))
				for i, t := range list {
					out[i] = tokenInfoJSON{t.Name, t.ReadOnly, t.CreatedAt, timePtr(t.LastUsed), timePtr(t.RevokedAt)}
				}
				return a.printJSON(out)
			}
			tb := a.table("NAME", "ACCESS", "CREATED", "LAST USED", "REVOKED")
			for _, t := range list {
				access := "read-write"
				if t.ReadOnly {
					access = "read-only"
				}
				tb.row(t.Name, access, formatTime(t.CreatedAt), formatTime(t.LastUsed), formatTime(t.RevokedAt))
			}
			return tb.flush()
		}),
	}
	jsonFlag(ls, &lsJSON)

	revoke := &cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke a token: from now on the API refuses it (401)",
		Example: `  subsync tokens revoke crm`,
		Args:    cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, err := a.runtime(ctx, false)
			if err != nil {
				return err
			}
			defer rt.Close()
			if err := rt.State().RevokeAPIToken(ctx, args[0]); err != nil {
				return err
			}
			a.log.InfoContext(ctx, "API token revoked", slog.String("token", args[0]))
			return nil
		}),
	}
	cmd.AddCommand(create, ls, revoke)
	return cmd
}
