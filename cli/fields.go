package cli

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/sink"
)

var datatypes = []string{
	sink.DatatypeString, sink.DatatypeNumber, sink.DatatypeDate,
	sink.DatatypeSingleChoice, sink.DatatypeMultipleChoice, sink.DatatypeDropdown,
}

func (a *app) fieldsCommand() *cobra.Command {
	cmd := group("fields", "Manage the account's custom fields (EXTRA<n> slots)", `  subsync fields ls
  subsync fields create "Member since" --type date
  subsync fields create Interests --type multiple_choice --choice sport --choice music
  subsync fields delete 7 --yes`)

	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the custom fields and their slots",
		Example: `  subsync fields ls
  subsync fields ls --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			fs, err := c.CustomFields(cmd.Context())
			if err != nil {
				return fmt.Errorf("list custom fields: %w", err)
			}
			if asJSON {
				if fs == nil {
					fs = []sink.CustomField{}
				}
				return a.printJSON(fs)
			}
			t := a.table("ID", "LABEL", "SLOT", "TYPE", "CHOICES")
			for _, f := range fs {
				t.row(f.ID, f.Label, f.Value, f.Datatype, strings.Join(f.Choices, ", "))
			}
			return t.flush()
		}),
	}
	jsonFlag(ls, &asJSON)

	var showJSON bool
	show := &cobra.Command{
		Use:     "show ID",
		Short:   "Show one custom field",
		Example: `  subsync fields show 7`,
		Args:    cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("field id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.CustomField(cmd.Context(), id)
			if err != nil {
				return fmt.Errorf("show custom field %d: %w", id, err)
			}
			return a.showField(f, showJSON)
		}),
	}
	jsonFlag(show, &showJSON)

	var (
		createJSON bool
		datatype   string
		choices    []string
	)
	create := &cobra.Command{
		Use:   "create LABEL",
		Short: "Create a custom field; the service assigns its EXTRA<n> slot",
		Long: `Create a custom field. Its data type (--type) cannot be changed later; choice types take
their choices with --choice, once per choice.`,
		Example: `  subsync fields create "Member since" --type date
  subsync fields create Region --type dropdown --choice north --choice south`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usagef("the field label is empty")
			}
			if !slices.Contains(datatypes, datatype) {
				return usagef("--type %q: want one of %s", datatype, strings.Join(datatypes, ", "))
			}
			choiceType := datatype == sink.DatatypeSingleChoice || datatype == sink.DatatypeMultipleChoice || datatype == sink.DatatypeDropdown
			if len(choices) > 0 && !choiceType {
				return usagef("--choice is only for the types single_choice, multiple_choice and dropdown")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.CreateCustomField(cmd.Context(), sink.CustomField{Label: args[0], Datatype: datatype, Choices: choices})
			if err != nil {
				return fmt.Errorf("create custom field %q: %w", args[0], err)
			}
			a.log.Info("custom field created", slog.Int64("field_id", f.ID), slog.String("slot", f.Value))
			return a.showField(f, createJSON)
		}),
	}
	create.Flags().StringVar(&datatype, "type", sink.DatatypeString, "data type: "+strings.Join(datatypes, ", "))
	create.Flags().StringArrayVar(&choices, "choice", nil, "a choice of a choice type (repeat the flag)")
	jsonFlag(create, &createJSON)

	var renameJSON bool
	rename := &cobra.Command{
		Use:     "rename ID LABEL",
		Short:   "Change the label of a custom field (its type cannot change)",
		Example: `  subsync fields rename 7 "Customer since"`,
		Args:    cobra.ExactArgs(2),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("field id", args[0])
			if err != nil {
				return err
			}
			if args[1] == "" {
				return usagef("the field label is empty")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			f, err := c.UpdateCustomField(cmd.Context(), id, args[1])
			if err != nil {
				return fmt.Errorf("rename custom field %d: %w", id, err)
			}
			return a.showField(f, renameJSON)
		}),
	}
	jsonFlag(rename, &renameJSON)

	var yes bool
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a custom field",
		Long: `Delete a custom field and the values subscribers hold in its slot. It asks for
confirmation on a terminal; scripts pass --yes.`,
		Example: `  subsync fields delete 7
  subsync fields delete 7 --yes`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("field id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := a.confirm(fmt.Sprintf("Delete custom field %d and every value stored in it?", id), yes); err != nil {
				return err
			}
			if err := c.DeleteCustomField(cmd.Context(), id); err != nil {
				return fmt.Errorf("delete custom field %d: %w", id, err)
			}
			a.log.Info("custom field deleted", slog.Int64("field_id", id))
			return nil
		}),
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")

	cmd.AddCommand(ls, show, create, rename, del)
	return cmd
}

func (a *app) showField(f sink.CustomField, asJSON bool) error {
	if asJSON {
		return a.printJSON(f)
	}
	return a.fields(
		"id", f.ID,
		"label", f.Label,
		"slot", f.Value,
		"type", f.Datatype,
		"choices", strings.Join(f.Choices, ", "),
	)
}
