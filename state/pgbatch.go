package state

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// execer runs a statement whose result only says whether it failed: a transaction's, or a
// pgx batch's (batchExecer), which sends it later with the others.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// batchExecer queues statements into a pgx batch. The result it returns counts nothing: the
// statements run when the batch is sent, and their errors come back then.
type batchExecer struct{ b *pgx.Batch }

func (q batchExecer) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	q.b.Queue(query, slices.Clone(args)...) // the caller may reuse args: the batch keeps them
	return driver.RowsAffected(0), nil
}

// sendBatch sends a batch's statements together, on one of the Store's connections, and
// returns the first error. The server runs them as one transaction (implicit: pgx ends the
// batch with a single Sync) and commits it after the last one; an error rolls it back.
func (s *Store) sendBatch(ctx context.Context, b *pgx.Batch) error {
	return s.withPgx(ctx, func(conn *pgx.Conn) error {
		br := conn.SendBatch(ctx, b)
		var first error
		for range b.Len() {
			if _, err := br.Exec(); err != nil && first == nil {
				first = err
			}
		}
		if err := br.Close(); err != nil && first == nil {
			first = err
		}
		return first
	})
}

// codeDivisionByZero is the SQLSTATE of the fence of a pipelined checkpoint: see
// checkpointPipelined.
const codeDivisionByZero = "22012"

// checkpointPipelined writes a checkpoint on Postgres in one round trip: its statements (the
// run's row, then its roster members, acknowledged batches, rejects and warnings) go to the
// server together as a pgx batch, which the server runs as one implicit transaction,
// committed after the last statement (synchronously: the checkpoint is durable when this
// returns, as a COMMIT's). Written one at a time, with a BEGIN and a COMMIT, a checkpoint
// took 4 to 5 round trips, each waiting for the server's process to be scheduled, and a run's
// batches wait for their checkpoint before their slot of the window is free.
//
// The statements that follow the run's row cannot ask whether it changed, so the fence is in
// SQL: the update divides 1 by the number of rows it changed, and a lease lost (no row
// changed) fails with division by zero, which rolls the whole batch back: nothing is written
// and the checkpoint fails with ErrLeaseLost, as the transaction's does.
func (s *Store) checkpointPipelined(ctx context.Context, cp Checkpoint) error {
	b := &pgx.Batch{}
	b.Queue(`WITH fenced AS (`+s.checkpointUpdate()+` RETURNING 1) SELECT 1 / COUNT(*) FROM fenced`, checkpointArgs(cp)...)
	if err := s.writeCheckpointRecords(ctx, batchExecer{b}, cp); err != nil {
		return err
	}
	err := s.sendBatch(ctx, b)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == codeDivisionByZero {
		return fmt.Errorf("run %d: %w", cp.RunID, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("checkpoint run %d: %w", cp.RunID, err)
	}
	return nil
}
