package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/sink"
)

func (a *app) listsCommand() *cobra.Command {
	cmd := group("lists", "Manage the service's subscriber lists", `  subsync lists ls
  subsync lists create "Weekly newsletter"
  subsync lists rename 12 "Monthly newsletter"
  subsync lists delete 12 --yes`)

	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List all subscriber lists",
		Example: `  subsync lists ls
  subsync lists ls --json | jq '.[] | select(.subscriber_emails > 0) | .id'`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx, cancel := a.interactive(cmd.Context())
			defer cancel()
			lists, err := c.Lists(ctx)
			if err != nil {
				return fmt.Errorf("list lists: %w", a.explainService(err))
			}
			if asJSON {
				if lists == nil {
					lists = []sink.List{}
				}
				return a.printJSON(lists)
			}
			t := a.table("ID", "TITLE", "E-MAIL", "SMS", "CREATED", "UPDATED")
			for _, l := range lists {
				t.row(l.ID, l.Title, l.SubscriberEmails, l.SubscriberSMS, l.DateCreated, l.DateUpdated)
			}
			return t.flush()
		}),
	}
	jsonFlag(ls, &asJSON)

	var showJSON bool
	show := &cobra.Command{
		Use:     "show ID",
		Short:   "Show one subscriber list",
		Example: `  subsync lists show 12`,
		Args:    cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("list id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.List(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("show list %d: %w", id, err)
			}
			return a.showList(l, showJSON)
		}),
	}
	jsonFlag(show, &showJSON)

	var createJSON bool
	create := &cobra.Command{
		Use:   "create TITLE",
		Short: "Create a subscriber list and print it",
		Example: `  subsync lists create "Weekly newsletter"
  id=$(subsync lists create "Weekly newsletter" --json | jq .id)`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usagef("the list title is empty")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.CreateList(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("create list %q: %w", args[0], err)
			}
			a.log.Info("list created", slog.Int64("list_id", l.ID), slog.String("title", l.Title))
			return a.showList(l, createJSON)
		}),
	}
	jsonFlag(create, &createJSON)

	var renameJSON bool
	rename := &cobra.Command{
		Use:     "rename ID TITLE",
		Short:   "Change the title of a subscriber list",
		Example: `  subsync lists rename 12 "Monthly newsletter"`,
		Args:    cobra.ExactArgs(2),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("list id", args[0])
			if err != nil {
				return err
			}
			if args[1] == "" {
				return usagef("the list title is empty")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.UpdateList(cmd.Context(), id, args[1])
			if err != nil {
				return fmt.Errorf("rename list %d: %w", id, err)
			}
			return a.showList(l, renameJSON)
		}),
	}
	jsonFlag(rename, &renameJSON)

	var yes, legacy bool
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a subscriber list",
		Long: `Delete a subscriber list. It asks for confirmation on a terminal; scripts pass --yes.
--legacy deletes through the legacy (v3) interface (api.legacy_base_url).`,
		Example: `  subsync lists delete 12
  subsync lists delete 12 --yes --legacy`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("list id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := a.confirm(fmt.Sprintf("Delete list %d and its memberships?", id), yes); err != nil {
				return err
			}
			if legacy {
				err = c.LegacyDeleteList(cmd.Context(), id)
			} else {
				err = c.DeleteList(cmd.Context(), id)
			}
			if err != nil {
				return fmt.Errorf("delete list %d: %w", id, err)
			}
			a.log.Info("list deleted", slog.Int64("list_id", id), slog.Bool("legacy", legacy))
			return nil
		}),
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	del.Flags().BoolVar(&legacy, "legacy", false, "use the legacy (v3) interface")

	cmd.AddCommand(ls, show, create, rename, del)
	return cmd
}

func (a *app) showList(l sink.List, asJSON bool) error {
	if asJSON {
		return a.printJSON(l)
	}
	return a.fields(
		"id", l.ID,
		"title", l.Title,
		"e-mail subscribers", l.SubscriberEmails,
		"SMS subscribers", l.SubscriberSMS,
		"created", l.DateCreated,
		"updated", l.DateUpdated,
	)
}
