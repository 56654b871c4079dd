package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Run returns one run by id.
func (s *Store) Run(ctx context.Context, id int64) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM subsync_run WHERE id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run %d: %w", id, err)
	}
	return r, nil
}

// RunByJob returns the run of a job.
func (s *Store) RunByJob(ctx context.Context, jobID int64) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM subsync_run WHERE job_id = $1", jobID))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run of job %d: %w", jobID, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("read run of job %d: %w", jobID, err)
	}
	return r, nil
}

// RunFilter selects runs for [Store.Runs]. Zero fields select everything.
type RunFilter struct {
	Kind   string
	Name   string
	States []RunState
	// BeforeID pages backwards: only runs with a smaller id.
	BeforeID int64
	// Limit caps the result; 0 means 50.
	Limit int
}

// Runs lists runs, newest first.
func (s *Store) Runs(ctx context.Context, f RunFilter) ([]Run, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Kind != "" {
		where = append(where, "kind = "+arg(f.Kind))
	}
	if f.Name != "" {
		where = append(where, "name = "+arg(f.Name))
	}
	if len(f.States) > 0 {
		var in []string
		for _, st := range f.States {
			in = append(in, arg(string(st)))
		}
		where = append(where, "state IN ("+strings.Join(in, ", ")+")")
	}
	if f.BeforeID > 0 {
		where = append(where, "id < "+arg(f.BeforeID))
	}
	q := "SELECT " + runColumns + " FROM subsync_run"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q += " ORDER BY id DESC LIMIT " + arg(limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}
