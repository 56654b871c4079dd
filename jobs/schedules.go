package jobs

import (
	"context"
	"fmt"
	"time"
)

// Schedule is a configured schedule and its next run times.
type Schedule struct {
	Kind string // KindSync or KindStatusPull
	// Also is the second schedule of that kind's job: "verify" for a sync's verify_every
	// (verifying runs), "reconcile" for the status pull's reconcile_schedule; empty for
	// the job's own schedule.
	Also     string
	Name     string // the sync's name; empty for the status pull
	ListID   int64  // the sync's list
	Spec     string // as configured; empty = on demand only
	TimeZone string // as configured; empty = UTC
	// Next are the next run times after the given moment, in the schedule's time zone; empty
	// when the schedule is empty or invalid.
	Next []time.Time
	// Err says why the schedule cannot be read.
	Err error
}

// Schedules lists every sync (scheduled or not) and the status pull, with the next n run
// times of each schedule after now; a sync's verify_every and the status pull's
// reconcile_schedule, when set, follow as schedules of their own (Also).
func Schedules(cfg Config, now time.Time, n int) []Schedule {
	var out []Schedule
	for _, s := range cfg.Syncs {
		out = append(out, schedule(KindSync, s.Name, s.ListID, s.Schedule, s.TimeZone, now, n))
		if s.VerifyEvery != "" {
			v := schedule(KindSync, s.Name, s.ListID, s.VerifyEvery, s.TimeZone, now, n)
			v.Also = "verify"
			out = append(out, v)
		}
	}
	sp := cfg.StatusPull
	out = append(out, schedule(KindStatusPull, "", 0, sp.Schedule, sp.TimeZone, now, n))
	if sp.ReconcileSchedule != "" {
		r := schedule(KindStatusPull, "", 0, sp.ReconcileSchedule, sp.TimeZone, now, n)
		r.Also = "reconcile"
		out = append(out, r)
	}
	return out
}

func schedule(kind, name string, listID int64, spec, tz string, now time.Time, n int) Schedule {
	s := Schedule{Kind: kind, Name: name, ListID: listID, Spec: spec, TimeZone: tz}
	if spec == "" {
		return s
	}
	sched, err := ParseSchedule(spec, tz)
	if err != nil {
		s.Err = err
		return s
	}
	t := now
	for range n {
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		s.Next = append(s.Next, t)
	}
	return s
}

// Schedules is [Schedules] of this runtime's configuration.
func (rt *Runtime) Schedules(now time.Time, n int) []Schedule {
	return Schedules(rt.cfg, now, n)
}

// PingService makes one cheap read of the subscriber service (its lists) to tell whether it
// is reachable with the configured credentials.
func (rt *Runtime) PingService(ctx context.Context) error {
	if rt.sinkErr != nil {
		return fmt.Errorf("subscriber service client: %w", rt.sinkErr)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := rt.sink.Lists(ctx); err != nil {
		return fmt.Errorf("read the service's lists: %w", err)
	}
	return nil
}
