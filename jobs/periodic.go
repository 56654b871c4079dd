package jobs

import (
	"fmt"

	"github.com/riverqueue/river"
)

// periodicJobs turns the schedules of the configuration into River periodic jobs. Only the
// elected leader inserts them, so a fleet runs each tick once.
func (rt *Runtime) periodicJobs() ([]*river.PeriodicJob, error) {
	var pjs []*river.PeriodicJob
	for _, s := range rt.cfg.Syncs {
		if s.VerifyEvery != "" {
			sched, err := ParseSchedule(s.VerifyEvery, s.TimeZone)
			if err != nil {
				return nil, fmt.Errorf("sync %q verify_every: %w", s.Name, err)
			}
			name := s.Name
			pjs = append(pjs, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
				return SyncArgs{Name: name, Verify: true}, nil
			}, &river.PeriodicJobOpts{ID: "verify:" + name}))
		}
		if s.Schedule == "" {
			continue
		}
		sched, err := ParseSchedule(s.Schedule, s.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("sync %q: %w", s.Name, err)
		}
		name := s.Name
		pjs = append(pjs, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
			return SyncArgs{Name: name}, nil
		}, &river.PeriodicJobOpts{ID: "sync:" + name}))
	}
	if sp := rt.cfg.StatusPull; sp.Schedule != "" {
		sched, err := ParseSchedule(sp.Schedule, sp.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("status pull: %w", err)
		}
		pjs = append(pjs, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
			return StatusPullArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "status_pull"}))
	}
	if sp := rt.cfg.StatusPull; sp.ReconcileSchedule != "" {
		sched, err := ParseSchedule(sp.ReconcileSchedule, sp.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("reconciliation: %w", err)
		}
		pjs = append(pjs, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
			return StatusPullArgs{Reconcile: true}, nil
		}, &river.PeriodicJobOpts{ID: "reconcile"}))
	}
	if r := rt.cfg.Retention; r.Schedule != "" {
		sched, err := ParseSchedule(r.Schedule, r.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("retention: %w", err)
		}
		pjs = append(pjs, river.NewPeriodicJob(sched, func() (river.JobArgs, *river.InsertOpts) {
			return PruneArgs{}, nil
		}, &river.PeriodicJobOpts{ID: "prune"}))
	}
	return pjs, nil
}
