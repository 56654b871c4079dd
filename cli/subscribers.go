package cli

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/sink"
)

func (a *app) subscribersCommand() *cobra.Command {
	cmd := group("subscribers", "Show, create, update, unsubscribe and delete subscribers", `  subsync subscribers show 1042
  subsync subscribers show ada@example.com --json
  subsync subscribers show 1042 --legacy
  subsync subscribers upsert --list 12 --email ada@example.com --firstname Ada
  subsync subscribers unsubscribe ada@example.com
  subsync subscribers delete 1042 --yes`)
	cmd.Aliases = []string{"subscriber"}
	cmd.AddCommand(a.subscribersShow(), a.subscribersLs(), a.subscribersUpsert(), a.subscribersUnsubscribe(),
		a.subscribersDelete(), a.subscribersChanges())
	return cmd
}

func (a *app) subscribersShow() *cobra.Command {
	var asJSON, legacy bool
	cmd := &cobra.Command{
		Use:   "show ID|EMAIL",
		Short: "Show a subscriber by id or e-mail",
		Long: `Show a subscriber by id, or by e-mail (through /subscribers/by_email), with every field
the service returns, external_id included. The service's answer carries no status (its
show response has none); where it does, it is shown. 'subsync subscribers ls --list ID
--status unsubscribed' lists a list's subscribers of one status.
--legacy shows the legacy (v3) representation (api.legacy_base_url), by id only.`,
		Example: `  subsync subscribers show 1042
  subsync subscribers show ada@example.com
  subsync subscribers show 1042 --legacy --json`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			byEmail := strings.Contains(args[0], "@")
			var id int64
			if !byEmail {
				var err error
				if id, err = parseID("subscriber id", args[0]); err != nil {
					return err
				}
			} else if legacy {
				return usagef("--legacy shows a subscriber by id only")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if legacy {
				s, err := c.LegacySubscriber(ctx, id)
				if err != nil {
					return fmt.Errorf("show subscriber %d (legacy): %w", id, err)
				}
				return a.showLegacySubscriber(s, asJSON)
			}
			var rec sink.SubscriberRecord
			if byEmail {
				r, found, err := c.SubscriberByEmail(ctx, args[0])
				if err != nil {
					return fmt.Errorf("find subscriber %s: %w", args[0], err)
				}
				if !found {
					return fmt.Errorf("find subscriber %s: no subscriber has this e-mail", args[0])
				}
				rec = r
			} else if rec, err = c.Subscriber(ctx, id); err != nil {
				return fmt.Errorf("show subscriber %d: %w", id, err)
			}
			return a.showSubscriber(rec, asJSON)
		}),
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&legacy, "legacy", false, "use the legacy (v3) interface")
	return cmd
}

func (a *app) subscribersLs() *cobra.Command {
	var (
		asJSON        bool
		list          int64
		page, perPage int
		status, after string
	)
	cmd := &cobra.Command{
		Use:     "ls --list ID",
		Aliases: []string{"list"},
		Short:   "List one page of a list's subscribers",
		Long: `List one page of a list's subscribers (GET /subscribers/by_list), with their external_id
and status. The service's rows need not carry a status: with --status every row listed has
that status (the service filtered by it); without, a row's status is shown where the
service returns one and "-" elsewhere.`,
		Example: `  subsync subscribers ls --list 12
  subsync subscribers ls --list 12 --status unsubscribed --page 2 --per-page 1000 --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if list <= 0 {
				return usagef("--list: want the id of a list")
			}
			if perPage < 1 || perPage > sink.MaxPerPage {
				return usagef("--per-page %d: want 1 to %d", perPage, sink.MaxPerPage)
			}
			if page < 1 {
				return usagef("--page %d: want 1 or more", page)
			}
			q := sink.ByListQuery{ListID: list, Page: page, PerPage: perPage, Status: status}
			if after != "" {
				t, err := parseTime(after)
				if err != nil {
					return usagef("--updated-after: %v", err)
				}
				q.UpdatedAfter = t
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			recs, err := c.SubscribersByList(cmd.Context(), q)
			if err != nil {
				return fmt.Errorf("list subscribers of list %d: %w", list, err)
			}
			for i := range recs {
				if recs[i].Status == "" {
					recs[i].Status = status // the service answered only subscribers of this status
				}
			}
			if asJSON {
				out := make([]subscriberJSON, len(recs))
				for i, r := range recs {
					out[i] = toSubscriberJSON(r)
				}
				return a.printJSON(out)
			}
			t := a.table("ID", "E-MAIL", "FIRST NAME", "LAST NAME", "EXTERNAL ID", "STATUS", "UPDATED")
			for _, r := range recs {
				t.row(r.ID, r.Email, r.Firstname, r.Lastname, r.ExternalID, r.Status, r.DateUpdated)
			}
			return t.flush()
		}),
	}
	jsonFlag(cmd, &asJSON)
	f := cmd.Flags()
	f.Int64Var(&list, "list", 0, "list id (required)")
	f.IntVar(&page, "page", 1, "page, from 1")
	f.IntVar(&perPage, "per-page", 100, "subscribers per page, at most 1000")
	f.StringVar(&status, "status", "", "only subscribers with this status: active, unsubscribed or bounce")
	f.StringVar(&after, "updated-after", "", "only subscribers updated after this time (RFC 3339 or YYYY-MM-DD)")
	return cmd
}

func (a *app) subscribersUpsert() *cobra.Command {
	var (
		asJSON bool
		list   int64
		s      sink.Subscriber
		status string
		sets   []string
	)
	cmd := &cobra.Command{
		Use:   "upsert --list ID --email EMAIL [flags]",
		Short: "Create a subscriber in a list, or update the one with this e-mail",
		Long: `Create a subscriber in a list, or update the one with the same e-mail. Empty flags are not
sent, so they never clear a value the service holds.

Without --status, a person subsync holds as unsubscribed or bounced (in any list; the list's
unsubscribed and bounced people are read from the service first if they never were) is sent
with that status, so that a service that makes a person active on an update without a status
does not revive them; anyone else is sent without one (the service makes a new subscriber
active). Only an explicit --status active re-activates such a person, and the command says so.`,
		Example: `  subsync subscribers upsert --list 12 --email ada@example.com --firstname Ada --lastname Lovelace
  subsync subscribers upsert --list 12 --email ada@example.com --set SAMTYKKEEPOST=1 --set EXTRA3=gold`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if list <= 0 {
				return usagef("--list: want the id of a list")
			}
			if strings.TrimSpace(s.Email) == "" {
				return usagef("--email is required")
			}
			switch status {
			case "", sink.StatusActive, sink.StatusUnsubscribed, sink.StatusBounce:
			default:
				return usagef("--status %q: want active, unsubscribed or bounce", status)
			}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--set %q: want FIELD=VALUE, e.g. EXTRA3=gold", kv)
				}
				s.SetField(k, v)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			rt, err := a.runtime(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer rt.Close()
			sent, note, err := a.upsertStatus(cmd.Context(), rt, c, list, s.Email, status)
			if err != nil {
				return err
			}
			id, err := c.UpsertSubscriber(cmd.Context(), list, s, sent)
			if err != nil {
				return fmt.Errorf("upsert subscriber %s: %w", s.Email, err)
			}
			if strings.HasPrefix(note, "re-activates") {
				if err := rt.Reactivated(cmd.Context(), list, s.Email, id); err != nil {
					return fmt.Errorf("upsert subscriber %s: re-activated in the service, but: %w", s.Email, err)
				}
			}
			a.log.Info("subscriber saved", slog.Int64("subscriber_id", id), slog.Int64("list_id", list), slog.String("status", sent))
			if asJSON {
				return a.printJSON(map[string]any{"id": id, "email": s.Email, "list_id": list, "status": sent, "note": note})
			}
			if note != "" {
				fmt.Fprintln(a.stderr, note)
			}
			return a.fields("id", id, "email", s.Email, "list", list, "status", cmpOrString(sent, "(not sent)"))
		}),
	}
	jsonFlag(cmd, &asJSON)
	f := cmd.Flags()
	f.Int64Var(&list, "list", 0, "list id (required)")
	f.StringVar(&s.Email, "email", "", "e-mail (required): the subscriber is matched by it")
	f.StringVar(&s.Firstname, "firstname", "", "first name")
	f.StringVar(&s.Lastname, "lastname", "", "last name")
	f.StringVar(&s.Address, "address", "", "postal address")
	f.StringVar(&s.Zip, "zip", "", "postal code")
	f.StringVar(&s.City, "city", "", "city")
	f.StringVar(&s.Phone, "phone", "", "phone number")
	f.StringVar(&s.ExternalID, "external-id", "", "the subscriber's id in another system (a CRM id)")
	f.StringVar(&s.Company, "company", "", "company")
	f.StringVar(&s.Birthday, "birthday", "", "birthday, YYYY-MM-DD")
	f.StringVar(&s.Gender, "gender", "", "gender")
	f.StringVar(&status, "status", "", "active, unsubscribed or bounce (default: not sent)")
	f.StringArrayVar(&sets, "set", nil, "FIELD=VALUE for a consent field or custom-field slot (repeat the flag)")
	return cmd
}

func (a *app) subscribersUnsubscribe() *cobra.Command {
	return &cobra.Command{
		Use:   "unsubscribe ID|EMAIL",
		Short: "Unsubscribe a subscriber, by id or e-mail",
		Long: `Unsubscribe a subscriber from every list, by id, or by e-mail (found through
/subscribers/by_email).`,
		Example: `  subsync subscribers unsubscribe 1042
  subsync subscribers unsubscribe ada@example.com`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			byEmail := strings.Contains(args[0], "@")
			var id int64
			if !byEmail {
				var err error
				if id, err = parseID("subscriber id", args[0]); err != nil {
					return err
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if byEmail {
				r, found, err := c.SubscriberByEmail(ctx, args[0])
				if err != nil {
					return fmt.Errorf("find subscriber %s: %w", args[0], err)
				}
				if !found {
					return fmt.Errorf("find subscriber %s: no subscriber has this e-mail", args[0])
				}
				id = r.ID
			}
			if err := c.Unsubscribe(ctx, id); err != nil {
				return fmt.Errorf("unsubscribe subscriber %d: %w", id, err)
			}
			a.log.Info("subscriber unsubscribed", slog.Int64("subscriber_id", id))
			return nil
		}),
	}
}

func (a *app) subscribersDelete() *cobra.Command {
	var yes, legacy bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a subscriber",
		Long: `Delete a subscriber. It asks for confirmation on a terminal; scripts pass --yes.
--legacy deletes through the legacy (v3) interface (api.legacy_base_url).`,
		Example: `  subsync subscribers delete 1042
  subsync subscribers delete 1042 --yes --legacy`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			id, err := parseID("subscriber id", args[0])
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := a.confirm(fmt.Sprintf("Delete subscriber %d?", id), yes); err != nil {
				return err
			}
			if legacy {
				err = c.LegacyDeleteSubscriber(cmd.Context(), id)
			} else {
				err = c.DeleteSubscriber(cmd.Context(), id)
			}
			if err != nil {
				return fmt.Errorf("delete subscriber %d: %w", id, err)
			}
			a.log.Info("subscriber deleted", slog.Int64("subscriber_id", id), slog.Bool("legacy", legacy))
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&legacy, "legacy", false, "use the legacy (v3) interface")
	return cmd
}

func (a *app) subscribersChanges() *cobra.Command {
	var (
		asJSON   bool
		from, to string
	)
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "Show the service's subscriber status changes (the status feed), without recording them",
		Long: `Show the service's latest subscriber status changes (GET /subscriberstatus), oldest
first. It only reads: to record the changes and write them back, use 'subsync status pull'.`,
		Example: `  subsync subscribers changes --from 2024-05-01
  subsync subscribers changes --from 2024-05-01T00:00:00Z --to 2024-05-02 --json`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			var f, t time.Time
			var err error
			if from != "" {
				if f, err = parseTime(from); err != nil {
					return usagef("--from: %v", err)
				}
			}
			if to != "" {
				if t, err = parseTime(to); err != nil {
					return usagef("--to: %v", err)
				}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			feed, err := c.ReadStatusFeed(cmd.Context(), f, t)
			if err != nil {
				return fmt.Errorf("fetch status changes: %w", err)
			}
			for _, g := range feed.Gaps {
				a.log.Warn("the status feed may hold more than it answered", slog.String("gap", g.Reason))
			}
			changes := feed.Changes
			if asJSON {
				out := make([]statusChangeJSON, len(changes))
				for i, ch := range changes {
					out[i] = statusChangeJSON{ch.SubscriberID, ch.Email, ch.Phone, ch.Status, ch.StatusMobile, ch.ListID, ch.DateUpdated}
				}
				return a.printJSON(out)
			}
			tw := a.table("WHEN", "SUBSCRIBER", "E-MAIL", "LIST", "STATUS", "SMS STATUS")
			for _, ch := range changes {
				tw.row(ch.DateUpdated.Format(time.RFC3339), ch.SubscriberID, ch.Email, ch.ListID, ch.Status, ch.StatusMobile)
			}
			return tw.flush()
		}),
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().StringVar(&from, "from", "", "changes from this time (RFC 3339 or YYYY-MM-DD); default: the service's (last 30 days)")
	cmd.Flags().StringVar(&to, "to", "", "changes up to this time (RFC 3339 or YYYY-MM-DD)")
	return cmd
}

type statusChangeJSON struct {
	SubscriberID int64     `json:"subscriber_id"`
	Email        string    `json:"email"`
	Phone        string    `json:"phone,omitempty"`
	Status       string    `json:"status"`
	StatusMobile string    `json:"status_mobile,omitempty"`
	ListID       int64     `json:"list_id"`
	DateUpdated  time.Time `json:"date_updated"`
}

// parseTime reads RFC 3339 or a date (midnight UTC).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2024-05-01T12:00:00Z) or a date (2024-05-01)", s)
}

// subscriberJSON is the v2 representation with the service's field names.
type subscriberJSON struct {
	ID          int64              `json:"id"`
	Email       string             `json:"email"`
	Firstname   string             `json:"firstname"`
	Lastname    string             `json:"lastname"`
	Address     string             `json:"address"`
	Zip         string             `json:"zip"`
	City        string             `json:"city"`
	Phone       *string            `json:"phone"`
	Company     string             `json:"company"`
	Birthday    *string            `json:"birthday"`
	Gender      string             `json:"gender"`
	ExternalID  *string            `json:"external_id"`
	Status      string             `json:"status,omitempty"`
	DateCreated string             `json:"date_created"`
	DateUpdated string             `json:"date_updated"`
	Fields      map[string]*string `json:"fields"`
}

func toSubscriberJSON(r sink.SubscriberRecord) subscriberJSON {
	fields := r.Fields
	if fields == nil {
		fields = map[string]*string{}
	}
	var ext *string
	if r.ExternalID != "" {
		ext = &r.ExternalID
	}
	return subscriberJSON{r.ID, r.Email, r.Firstname, r.Lastname, r.Address, r.Zip, r.City, r.Phone, r.Company,
		r.Birthday, r.Gender, ext, r.Status, r.DateCreated, r.DateUpdated, fields}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (a *app) showSubscriber(r sink.SubscriberRecord, asJSON bool) error {
	if asJSON {
		return a.printJSON(toSubscriberJSON(r))
	}
	pairs := []any{
		"id", r.ID, "email", r.Email, "firstname", r.Firstname, "lastname", r.Lastname,
		"address", r.Address, "zip", r.Zip, "city", r.City, "phone", deref(r.Phone),
		"company", r.Company, "birthday", deref(r.Birthday), "gender", r.Gender, "external_id", r.ExternalID,
	}
	status := r.Status
	if status == "" {
		status = "(not in the service's answer)"
	}
	pairs = append(pairs, "status", status)
	for _, k := range slices.Sorted(maps.Keys(r.Fields)) {
		pairs = append(pairs, k, deref(r.Fields[k]))
	}
	pairs = append(pairs, "created", r.DateCreated, "updated", r.DateUpdated)
	return a.fields(pairs...)
}

// legacySubscriberJSON is the legacy (v3) representation with its own field names.
type legacySubscriberJSON struct {
	ID          int64             `json:"id"`
	Email       string            `json:"email"`
	Firstname   string            `json:"firstname"`
	Lastname    string            `json:"lastname"`
	Address     string            `json:"address"`
	Zip         string            `json:"zip"`
	City        string            `json:"city"`
	Phone       string            `json:"phone"`
	Mobile      string            `json:"mobile"`
	Firm        string            `json:"firm"`
	Age         string            `json:"age"`
	Gender      string            `json:"gender"`
	Extra       map[string]string `json:"extra"`
	DateCreated string            `json:"date_created"`
	DateUpdated string            `json:"date_updated"`
}

func (a *app) showLegacySubscriber(s sink.LegacySubscriber, asJSON bool) error {
	if asJSON {
		extra := s.Extra
		if extra == nil {
			extra = map[string]string{}
		}
		return a.printJSON(legacySubscriberJSON{s.ID, s.Email, s.Firstname, s.Lastname, s.Address, s.Zip, s.City,
			s.Phone, s.Mobile, s.Firm, s.Age, s.Gender, extra, s.DateCreated, s.DateUpdated})
	}
	pairs := []any{
		"id", s.ID, "email", s.Email, "firstname", s.Firstname, "lastname", s.Lastname,
		"address", s.Address, "zip", s.Zip, "city", s.City, "phone", s.Phone, "mobile", s.Mobile,
		"firm", s.Firm, "age", s.Age, "gender", s.Gender,
	}
	for _, k := range slices.Sorted(maps.Keys(s.Extra)) {
		pairs = append(pairs, k, s.Extra[k])
	}
	pairs = append(pairs, "created", s.DateCreated, "updated", s.DateUpdated)
	return a.fields(pairs...)
}
