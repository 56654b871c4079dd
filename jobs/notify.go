package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/subsync/subsync/state"
)

// NotifySpec configures the failure notifications.
type NotifySpec struct {
	// WebhookURL receives a JSON {"text": …} POST (the body Slack's and Microsoft Teams'
	// incoming webhooks accept). It is a secret: it appears in no log line or error. Empty =
	// no notifications.
	WebhookURL string
	// MissedScheduleGrace is how late a scheduled sync may start before it is reported as
	// missed. Default 15 minutes.
	MissedScheduleGrace time.Duration
	// HTTPClient posts the messages; nil = a client with a 10 s timeout.
	HTTPClient *http.Client
}

// writeBackFailedNote ends the message of a status pull whose write-back failed.
const writeBackFailedNote = "the changes stay pending and are retried on the next pull"

// writeBackNotifyAfter is how many status pulls in a row must fail to write back before the
// failure is reported: one failure is retried by the next pull anyway.
const writeBackNotifyAfter = 2

// notifier sends the failure messages. A failure streak is told once: a run failure when
// the previous final run of the same sync (or status pull) did not fail; a write-back
// failure when exactly writeBackNotifyAfter pulls in a row failed to write back; a missed
// schedule once per missed tick. Run history holds the streaks, so a restarted worker (or
// another worker of a fleet) does not repeat a run failure's message.
type notifier struct {
	spec NotifySpec
	log  *slog.Logger

	mu     sync.Mutex
	missed map[string]time.Time // sync name → the tick whose miss was reported
}

func newNotifier(spec NotifySpec, log *slog.Logger) *notifier {
	if spec.WebhookURL == "" {
		return nil
	}
	if spec.HTTPClient == nil {
		spec.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if spec.MissedScheduleGrace <= 0 {
		spec.MissedScheduleGrace = 15 * time.Minute
	}
	return &notifier{spec: spec, log: log, missed: map[string]time.Time{}}
}

// post sends one message. The webhook URL is never logged: an error of the HTTP client
// (which names the URL) is reduced to its cause.
func (n *notifier) post(ctx context.Context, text string) {
	body, _ := json.Marshal(map[string]string{"text": text})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.spec.WebhookURL, bytes.NewReader(body))
	if err != nil {
		n.log.WarnContext(ctx, "notify: the webhook URL is not usable")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.spec.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		n.log.WarnContext(ctx, "notify: the webhook could not be reached", slog.String("error", err.Error()))
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 300 {
		n.log.WarnContext(ctx, "notify: the webhook refused the message", slog.Int("status", resp.StatusCode))
		return
	}
	n.log.InfoContext(ctx, "notify: message sent", slog.String("text", text))
}

// streak counts the final runs (completed or failed) of run's sync or status pull, newest
// first from run itself, for which bad holds, up to max.
func (rt *Runtime) streak(ctx context.Context, run state.Run, bad func(state.Run) bool, max int) (int, error) {
	f := state.RunFilter{Kind: run.Kind, States: []state.RunState{state.RunCompleted, state.RunFailed},
		BeforeID: run.ID + 1, Limit: max + 1}
	if run.Kind == KindSync {
		f.Name = run.Name
	}
	runs, err := rt.store.Runs(ctx, f)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		if !bad(r) {
			break
		}
		n++
	}
	return n, nil
}

// runFinal tells the webhook about a run that just became final, once per failure streak.
func (rt *Runtime) runFinal(ctx context.Context, run state.Run) {
	n := rt.notify
	if n == nil {
		return
	}
	what := describeRun(run)
	switch {
	case run.State == state.RunFailed:
		if run.Kind == KindImport {
			n.post(ctx, fmt.Sprintf("subsync: %s failed (run %d): %s", what, run.ID, run.Error))
			return
		}
		k, err := rt.streak(ctx, run, func(r state.Run) bool { return r.State == state.RunFailed }, 2)
		if err != nil {
			n.log.WarnContext(ctx, "notify: read run history", slog.Any("error", err))
			return
		}
		if k == 1 {
			n.post(ctx, fmt.Sprintf("subsync: %s failed (run %d): %s. No further message until it succeeds again.", what, run.ID, run.Error))
		}
	case run.Kind == KindStatusPull && run.State == state.RunCompleted && strings.Contains(run.Error, writeBackFailedNote):
		k, err := rt.streak(ctx, run, func(r state.Run) bool {
			return r.State == state.RunCompleted && strings.Contains(r.Error, writeBackFailedNote)
		}, writeBackNotifyAfter+1)
		if err != nil {
			n.log.WarnContext(ctx, "notify: read run history", slog.Any("error", err))
			return
		}
		if k == writeBackNotifyAfter {
			n.post(ctx, fmt.Sprintf("subsync: write-back keeps failing (%d status pulls in a row, run %d): %s", k, run.ID, run.Error))
		}
	}
}

func describeRun(run state.Run) string {
	switch run.Kind {
	case KindSync:
		return fmt.Sprintf("sync %q", run.Name)
	case KindStatusPull:
		return "the status pull"
	default:
		return fmt.Sprintf("import of %s", run.Name)
	}
}

// checkMissed reports each scheduled sync whose latest tick (since this worker started, and
// more than the grace ago) has no run: no worker inserted or started it.
func (rt *Runtime) checkMissed(ctx context.Context, since, now time.Time) error {
	n := rt.notify
	if n == nil {
		return nil
	}
	for _, s := range rt.cfg.Syncs {
		if s.Schedule == "" {
			continue
		}
		sched, err := ParseSchedule(s.Schedule, s.TimeZone)
		if err != nil {
			continue
		}
		var tick time.Time
		for t := sched.Next(since); !t.IsZero() && !t.After(now.Add(-n.spec.MissedScheduleGrace)); t = sched.Next(t) {
			tick = t
		}
		if tick.IsZero() {
			continue
		}
		n.mu.Lock()
		told := n.missed[s.Name].Equal(tick)
		n.mu.Unlock()
		if told {
			continue
		}
		runs, err := rt.store.Runs(ctx, state.RunFilter{Kind: KindSync, Name: s.Name, Limit: 1})
		if err != nil {
			return err
		}
		if len(runs) > 0 && (!runs[0].ScheduledAt.Before(tick) || !runs[0].StartedAt.Before(tick)) {
			continue
		}
		n.mu.Lock()
		n.missed[s.Name] = tick
		n.mu.Unlock()
		n.post(ctx, fmt.Sprintf("subsync: sync %q missed its schedule: nothing ran for the %s tick (%s %s)",
			s.Name, tick.Format("2006-01-02 15:04 MST"), s.Schedule, tzOrUTC(s.TimeZone)))
	}
	return nil
}

func tzOrUTC(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}
