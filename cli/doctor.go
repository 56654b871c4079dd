package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/config"
	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
)

// errDoctorFailed is the error of a doctor run that found problems (exit code 1): the
// checklist on standard output says which.
var errDoctorFailed = errors.New("the service is not set up as the configuration expects")

func (a *app) doctorCommand() *cobra.Command {
	var samples string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check, read-only, that the service behaves and is set up as the configuration expects",
		Long: `Contact the service with the configured credentials, read-only, and check that it
answers and accepts the credentials, that every configured list exists, that every mapped
custom-field label resolves to a slot of the expected datatype, that the status feed answers
in a shape subsync reads (the last 30 days of it; with no change there, the entries' shape is
not checked and the line says so), that the legacy (v3) base URL answers when it is set, which
form of the list parameter is used, that every configured SQL source connects and its query
prepares (in a read-only transaction, no row read), and that the status write-back can run (its
statement is prepared on the source database, not run; a contacts file is read for its email
column). It prints
a checklist with the fix for each failure and exits 0 when all is well, 1 otherwise.

With --save-samples DIR every response is written to DIR with personal data replaced, so it
can be attached to a bug report. Also reachable as "subsync config check --online".`,
		Example: `  subsync doctor
  subsync doctor --save-samples ./samples`,
		Args: cobra.NoArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error { return a.doctor(cmd.Context(), samples) }),
	}
	cmd.Flags().StringVar(&samples, "save-samples", "", "write every response, personal data replaced, to this directory")
	return cmd
}

// doctorFeedDays is how far back doctor reads the status feed: long enough that an account
// in use shows some change, so that the entries' shape is checked.
const (
	doctorFeedDays   = 30
	doctorFeedWindow = doctorFeedDays * 24 * time.Hour
)

// check is one line of the doctor's checklist.
type check struct {
	state string // ok, FAIL or skip
	what  string
	fix   string
}

// doctor runs the checks and prints the checklist.
func (a *app) doctor(ctx context.Context, samplesDir string) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	if err := cfg.CheckCredentials(); err != nil {
		return err
	}
	sc := cfg.SinkConfig()
	// The samples hold what the service answered: credentials it echoes, in any encoding,
	// are masked as the client masks them in errors.
	rec := &recorder{base: http.DefaultTransport, masker: secret.BasicAuth(
		base64.StdEncoding.EncodeToString([]byte(sc.UserID+":"+sc.APIKey)), sc.APIKey)}
	if sc.HTTPClient != nil && sc.HTTPClient.Transport != nil {
		rec.base = sc.HTTPClient.Transport
	}
	// No redirect is followed: the credentials go to the configured host only.
	sc.HTTPClient = &http.Client{Transport: rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sc.Logger = a.log
	sc.Version = a.version
	sc.MaxAttempts = min(cmpOr(sc.MaxAttempts, 2), 2)
	c, err := sink.New(sc)
	if err != nil {
		return &usageError{err}
	}
	checks := append(doctorChecks(ctx, c, cfg), a.listFormCheck(ctx))
	checks = append(checks, sqlSourceChecks(ctx, cfg)...)
	checks = append(checks, writeBackCheck(ctx, cfg)...)
	failed := 0
	fmt.Fprintf(a.stdout, "subsync doctor: %s\n", sc.BaseURL)
	for _, ch := range checks {
		fmt.Fprintf(a.stdout, "  %-4s  %s\n", ch.state, ch.what)
		if ch.fix != "" {
			fmt.Fprintf(a.stdout, "        fix: %s\n", ch.fix)
		}
		if ch.state == "FAIL" {
			failed++
		}
	}
	if samplesDir != "" {
		n, err := rec.save(samplesDir)
		if err != nil {
			return fmt.Errorf("save samples: %w", err)
		}
		fmt.Fprintf(a.stdout, "%d response(s) saved to %s, personal data replaced\n", n, samplesDir)
	}
	if failed > 0 {
		fmt.Fprintf(a.stdout, "%d problem(s)\n", failed)
		return fmt.Errorf("%w: %d problem(s)", errDoctorFailed, failed)
	}
	fmt.Fprintln(a.stdout, "all checks passed")
	return nil
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// doctorChecks makes the read-only requests and judges them.
func doctorChecks(ctx context.Context, c *sink.Client, cfg *config.Config) []check {
	var out []check
	lists, err := c.Lists(ctx)
	if err != nil {
		fix := "check api.base_url and that the service is reachable from here"
		var apiErr *sink.APIError
		if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden) {
			fix = "check api.user_id and the API key (SUBSYNC_API_KEY)"
		}
		return append(out, check{"FAIL", "the service answers and accepts the credentials: " + err.Error(), fix})
	}
	out = append(out, check{"ok", fmt.Sprintf("the service answers and accepts the credentials (%d lists)", len(lists)), ""})

	have := map[int64]string{}
	for _, l := range lists {
		have[l.ID] = l.Title
	}
	for i, s := range cfg.Syncs {
		if title, ok := have[s.List]; ok {
			out = append(out, check{"ok", fmt.Sprintf("list %d (syncs[%d] %q) exists: %q", s.List, i, s.Name, title), ""})
			continue
		}
		out = append(out, check{"FAIL", fmt.Sprintf("list %d (syncs[%d] %q) does not exist", s.List, i, s.Name),
			fmt.Sprintf("create it (subsync lists create TITLE) or set syncs[%d].list to an existing list (subsync lists ls)", i)})
	}

	fields, err := c.CustomFields(ctx)
	if err != nil {
		out = append(out, check{"FAIL", "the custom fields can be read: " + err.Error(), "check that the account may read custom fields"})
	} else {
		out = append(out, fieldChecks(cfg, fields)...)
	}

	now := time.Now().UTC()
	feed, err := c.ReadStatusFeed(ctx, now.Add(-doctorFeedWindow), now)
	switch {
	case errors.Is(err, sink.ErrStatusFeedShape), errors.Is(err, sink.ErrStatusFeedLimit):
		out = append(out, check{"FAIL", "the status feed answers in a shape subsync reads: " + err.Error(),
			"run again with --save-samples DIR and attach the samples to a bug report: subsync cannot pull statuses from this service"})
	case err != nil:
		out = append(out, check{"FAIL", "the status feed answers: " + err.Error(), "check that the account may read /subscriberstatus"})
	case len(feed.Changes) == 0:
		out = append(out, check{"skip", fmt.Sprintf("the status feed answers, but showed no change in the last %d days "+
			"(%d request(s)): entry shape not checked; run doctor again once someone has unsubscribed or bounced",
			doctorFeedDays, feed.Requests), ""})
	default:
		what := fmt.Sprintf("the status feed answers in a shape subsync reads (%d changes in the last %d days, %d request(s))",
			len(feed.Changes), doctorFeedDays, feed.Requests)
		for _, g := range feed.Gaps {
			what += "; " + g.Reason
		}
		out = append(out, check{"ok", what, ""})
	}

	if cfg.API.LegacyBaseURL == "" {
		out = append(out, check{"skip", "the legacy (v3) interface: api.legacy_base_url is not set (v3 commands refuse)", ""})
	} else {
		_, err := c.LegacySubscriber(ctx, 1)
		var apiErr *sink.APIError
		if err == nil || (errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound) {
			out = append(out, check{"ok", "the legacy (v3) interface answers at api.legacy_base_url", ""})
		} else {
			out = append(out, check{"FAIL", "the legacy (v3) interface answers: " + err.Error(),
				"check api.legacy_base_url (the v3 root, e.g. …/api/v3), or remove it if v3 is not used"})
		}
	}
	return out
}

// fieldChecks checks every mapped custom-field label against the service's fields.
func fieldChecks(cfg *config.Config, fields []sink.CustomField) []check {
	var out []check
	seen := map[string]bool{}
	for i, s := range cfg.Syncs {
		if s.Mapping.Spec == nil {
			continue
		}
		names := make([]string, 0, len(s.Mapping.Spec.Columns))
		for name := range s.Mapping.Spec.Columns {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			col := s.Mapping.Spec.Columns[name]
			if col.To != mapping.TargetCustom || seen[col.Custom+"\x00"+col.Datatype] {
				continue
			}
			seen[col.Custom+"\x00"+col.Datatype] = true
			where := fmt.Sprintf("syncs[%d] %q, column %q", i, s.Name, name)
			var match []sink.CustomField
			for _, f := range fields {
				if f.Label == col.Custom || strings.EqualFold(strings.TrimSpace(f.Label), strings.TrimSpace(col.Custom)) {
					match = append(match, f)
				}
			}
			switch {
			case len(match) == 0 && s.Mapping.Spec.CreateMissing:
				out = append(out, check{"ok", fmt.Sprintf("custom field %q (%s) does not exist; create_missing creates it on the first run", col.Custom, where), ""})
			case len(match) == 0:
				out = append(out, check{"FAIL", fmt.Sprintf("custom field %q (%s) does not exist", col.Custom, where),
					fmt.Sprintf("create it (subsync fields create %q --type %s), or set create_missing = true in the mapping",
						col.Custom, cmpOrString(col.Datatype, sink.DatatypeString))})
			case len(match) > 1:
				out = append(out, check{"FAIL", fmt.Sprintf("custom field %q (%s) matches %d fields", col.Custom, where, len(match)),
					"rename or delete all but one (subsync fields ls)"})
			case col.Datatype != "" && !strings.EqualFold(match[0].Datatype, col.Datatype):
				out = append(out, check{"FAIL", fmt.Sprintf("custom field %q (%s) is %s of datatype %s; the mapping expects %s",
					col.Custom, where, match[0].Value, match[0].Datatype, col.Datatype),
					fmt.Sprintf("set the column's datatype to %q in the mapping, or map it to a field of datatype %s", match[0].Datatype, col.Datatype)})
			default:
				out = append(out, check{"ok", fmt.Sprintf("custom field %q (%s) is %s (%s)", col.Custom, where, match[0].Value, match[0].Datatype), ""})
			}
		}
	}
	return out
}

func cmpOrString(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// recorder is an http.RoundTripper that keeps every response it passes on.
type recorder struct {
	base   http.RoundTripper
	masker *secret.Masker
	mu     sync.Mutex
	got    []sample
}

type sample struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Query  string          `json:"query,omitempty"`
	Status int             `json:"status"`
	Type   string          `json:"content_type,omitempty"`
	Body   json.RawMessage `json:"body"`
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, rerr
	}
	r.mu.Lock()
	m := r.masker.String
	r.got = append(r.got, sample{Method: req.Method, Path: m(req.URL.Path), Query: m(req.URL.RawQuery), Status: resp.StatusCode,
		Type: resp.Header.Get("Content-Type"), Body: json.RawMessage(m(string(redactBody([]byte(m(string(body)))))))})
	r.mu.Unlock()
	return resp, nil
}

// save writes every sample to dir as NN-<path>.json and returns how many.
func (r *recorder) save(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.got {
		name := strings.Trim(strings.NewReplacer("/", "_", ".", "_").Replace(s.Path), "_")
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return i, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s-%s.json", i+1, strings.ToLower(s.Method), name)), append(data, '\n'), 0o600); err != nil {
			return i, err
		}
	}
	return len(r.got), nil
}

// keptMembers are the members whose values are not personal data: ids, statuses, times,
// list and field names, counts and paging. Every other value is replaced.
var keptMembers = []string{
	"id", "subscriber_id", "subscriber_list_id", "list_id", "status", "email_status", "status_mobile", "phone_status",
	"sms_status", "date_updated", "updated_at", "date_created", "created_at", "title", "label", "value", "datatype",
	"choices", "subscriber_emails", "subscriber_sms", "total", "page", "current_page", "last_page", "per_page",
	"total_pages", "pages", "next", "next_page", "prev", "links", "meta", "message", "error",
}

// redactBody replaces the personal data of a response body: in JSON, every value of a member
// not in keptMembers (and any string that holds an @); a body that is not JSON entirely.
func redactBody(body []byte) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		s, _ := json.Marshal(fmt.Sprintf("(%d bytes that are not JSON, not kept)", len(body)))
		return s
	}
	out, err := json.Marshal(redactValue(v, true))
	if err != nil {
		return json.RawMessage(`"(not kept)"`)
	}
	return out
}

func redactValue(v any, keep bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = redactValue(val, keep && slices.Contains(keptMembers, k) || keep && isArrayKey(k))
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = redactValue(val, keep)
		}
		return x
	case string:
		if !keep || strings.Contains(x, "@") {
			if x == "" {
				return ""
			}
			return "(replaced)"
		}
		return x
	case json.Number:
		if !keep {
			return json.Number("0")
		}
		return x
	}
	return v
}

// isArrayKey reports whether k holds the entries of a collection (their members are judged
// one by one).
func isArrayKey(k string) bool {
	switch k {
	case "data", "items", "results", "changes", "subscribers", "statuses", "entries", "lists", "custom_fields":
		return true
	}
	return false
}
