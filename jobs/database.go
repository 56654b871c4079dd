package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/state"
)

// database is the queue's database: River's tables and subsync's, on SQLite or Postgres.
type database struct {
	dialect state.Dialect
	pool    *pgxpool.Pool // Postgres: shared by River and the state store
	riverDB *sql.DB       // SQLite: River's pool, one connection as riversqlite advises
	stateDB *sql.DB       // the state store's handle
}

func openDatabase(ctx context.Context, cfg Config) (*database, error) {
	if cfg.DatabaseURL != "" {
		pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("connect to postgres: %w", secret.ScrubDSN(err, "pgx", cfg.DatabaseURL))
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to postgres: %w", secret.ScrubDSN(err, "pgx", cfg.DatabaseURL))
		}
		return &database{dialect: state.Postgres, pool: pool, stateDB: stdlib.OpenDBFromPool(pool)}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, SQLiteFile)
	riverDB, err := state.OpenSQLite(ctx, path)
	if err != nil {
		return nil, err
	}
	riverDB.SetMaxOpenConns(1)
	stateDB, err := state.OpenSQLite(ctx, path)
	if err != nil {
		_ = riverDB.Close()
		return nil, err
	}
	stateDB.SetMaxOpenConns(4)
	return &database{dialect: state.SQLite, riverDB: riverDB, stateDB: stateDB}, nil
}

// migrate applies River's migrations and subsync's, each serialised against other processes
// starting at the same time.
func (d *database) migrate(ctx context.Context) error {
	if d.dialect == state.Postgres {
		// River's migrations must run one transaction per version (a new enum value cannot be
		// used in the transaction that adds it), so concurrent starts are serialised by a
		// session advisory lock held on one connection for the duration.
		conn, err := d.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("migrate river tables (postgres): %w", err)
		}
		defer conn.Release()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", riverMigrationLock); err != nil {
			return fmt.Errorf("migrate river tables (postgres): lock: %w", err)
		}
		defer func() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", riverMigrationLock)
		}()
		m, err := rivermigrate.New(riverpgxv5.New(d.pool), nil)
		if err == nil {
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		}
		if err != nil {
			return fmt.Errorf("migrate river tables (postgres): %w", err)
		}
	} else {
		m, err := rivermigrate.New(riversqlite.New(d.riverDB), nil)
		if err != nil {
			return fmt.Errorf("migrate river tables (sqlite): %w", err)
		}
		// The transaction takes SQLite's write lock as it begins (see state.SQLiteDSN), so a
		// second process migrating at the same time waits, then finds nothing to do.
		tx, err := d.riverDB.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate river tables (sqlite): %w", err)
		}
		if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migrate river tables (sqlite): %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate river tables (sqlite): %w", err)
		}
	}
	if _, err := state.Migrate(ctx, d.stateDB, d.dialect); err != nil {
		return err
	}
	return nil
}

// riverMigrationLock is the Postgres advisory lock serialising River migrations.
const riverMigrationLock = 0x5ab5_0001

// newQueue builds the River client for the database.
func (d *database) newQueue(cfg *river.Config) (queue, error) {
	if d.dialect == state.Postgres {
		return river.NewClient(riverpgxv5.New(d.pool), cfg)
	}
	return river.NewClient(riversqlite.New(d.riverDB), cfg)
}

// resetJob makes a job that River still believes running available again, because the run's
// lease expired: its worker died. River's own rescuer cannot do it for jobs without a
// timeout, and only an hour later. The update is fenced by the attempt number the caller
// saw, so a job fetched again meanwhile (a new attempt) is left alone, and two sweepers may
// race.
func (d *database) resetJob(ctx context.Context, jobID int64, attempt int) (bool, error) {
	res, err := d.stateDB.ExecContext(ctx,
		"UPDATE river_job SET state = 'available' WHERE id = $1 AND state = 'running' AND attempt = $2", jobID, attempt)
	if err != nil {
		return false, fmt.Errorf("reset job %d: %w", jobID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("reset job %d: %w", jobID, err)
	}
	return n > 0, nil
}

// queueDepth counts River's jobs by state.
func (d *database) queueDepth(ctx context.Context) (map[string]int64, error) {
	rows, err := d.stateDB.QueryContext(ctx, "SELECT state, COUNT(*) FROM river_job GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("count jobs by state: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count jobs by state: %w", err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs by state: %w", err)
	}
	return out, nil
}

func (d *database) close() {
	if d.stateDB != nil {
		_ = d.stateDB.Close()
	}
	if d.riverDB != nil {
		_ = d.riverDB.Close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
}

// queue is what the runtime uses of a River client; *river.Client[pgx.Tx] and
// *river.Client[*sql.Tx] both satisfy it.
type queue interface {
	ID() string
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobCancel(ctx context.Context, jobID int64) (*rivertype.JobRow, error)
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	PeriodicJobs() *river.PeriodicJobBundle
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Stopped() <-chan struct{}
}
