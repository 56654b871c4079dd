package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// Sender is what a run needs of the service; *sink.Client implements it.
type Sender interface {
	InsertBatch(ctx context.Context, opts sink.BulkOptions, rows []sink.Subscriber) (sink.BatchResult, error)
}

// Store is what a run needs of the database; StateStore adapts a *state.Store.
type Store interface {
	Checkpoint(ctx context.Context, cp state.Checkpoint) error
	// SaveFingerprintsStepped saves the fingerprints pending; it may do so in steps,
	// calling between (unless nil) after each (see state.Store.SaveFingerprintsStepped).
	SaveFingerprintsStepped(ctx context.Context, f *state.FingerprintSet, between func()) error
	SuppressionVersion(ctx context.Context) (int64, error)
	LoadSuppressions(ctx context.Context, listID int64) (Suppressions, error)
}

// Suppressions is a list's suppression list as loaded; *state.SuppressionSet implements it.
type Suppressions interface {
	Version() int64
	Len() int
	Status(emailHash uint64) (string, bool)
	// Erased reports whether the address whose hash is given belongs to a person erased by
	// `subsync forget`.
	Erased(emailHash uint64) bool
}

// StateStore adapts a *state.Store to Store.
func StateStore(s *state.Store) Store { return stateStore{s} }

type stateStore struct{ *state.Store }

func (s stateStore) LoadSuppressions(ctx context.Context, listID int64) (Suppressions, error) {
	return s.Store.LoadSuppressions(ctx, listID)
}

// Config is what one run streams, and where to. Reader, Mapper, Store and, unless DryRun,
// Sender are required.
type Config struct {
	Reader sources.Reader
	Mapper *mapping.Mapper
	Sender Sender
	Store  Store
	Logger *slog.Logger // nil: discard
	// MapWorkers is how many goroutines map records (at least one).
	MapWorkers int
	ListID     int64
	Tag        string // bulkinsert's tag mode
	// RunID, Owner and LeaseTTL identify the run and its lease in checkpoints.
	RunID    int64
	Owner    string
	LeaseTTL time.Duration
	// Window is how many batches may be sent and not yet checkpointed (at least one).
	Window int
	// Done are the ordinals above the run's checkpoint, ascending, that an earlier attempt
	// delivered and counted (state.Store.AckedAbove): they are read again for their e-mails
	// only, as the rows below the checkpoint are.
	Done []int64
	// Delta skips rows whose payload is unchanged since the last push (Fingerprints).
	Delta bool
	// Suppression is SuppressionSkip ("" too) or SuppressionUpdateKeepStatus.
	Suppression string
	// Suppressions is the list's suppression list as loaded before the run (nil: loaded by
	// the run); the run re-reads it whenever its version changes.
	Suppressions Suppressions
	// Fingerprints are the list's delta fingerprints (loaded for a delta run); the run adds
	// what is acknowledged and saves them every FingerprintFlush rows (more once the list
	// grows: see growFlush) and at the end.
	Fingerprints     *state.FingerprintSet
	FingerprintFlush int
	// MemoryBudget is how many bytes each of the run's sets that grow with its rows (the
	// deduper's e-mail hashes) may hold in memory before it spills to a temporary file in
	// TempDir (0: MemoryBudgetDefault; TempDir "": os.TempDir()).
	MemoryBudget int64
	TempDir      string
	// Roster, when set, is the roster of the sync the run belongs to, as loaded before the
	// run (state.Store.LoadRoster): the run records what it delivers in it, with each
	// checkpoint, and remembers every address and key it reads, for Removals. A mapping with a
	// key column (external_id) then moves people: see roster.go.
	Roster *state.Roster
	// Held, when set, makes the run a verifying one (Delta is then ignored): a row is sent
	// unless the service holds its e-mail with the values it sends (see Held), whatever the
	// fingerprints say, and the fingerprint of every row found held is stored.
	Held *Held
	// DryRun: outcomes carry the row's line, e-mail and status (see DryRun).
	DryRun bool
	// Stopping, when closed, stops the run: it checkpoints what is in flight and returns
	// ErrInterrupted.
	Stopping <-chan struct{}
	// OnCommit, when set, is called with the counts of each checkpoint written.
	OnCommit func(state.Counts)
	// OnConflictWait, when set (tests), is called each time a batch waits for an earlier
	// batch holding one of its e-mails to be acknowledged.
	OnConflictWait func(seq int)
}

// MemoryBudgetDefault is Config.MemoryBudget's default (32 MiB).
const MemoryBudgetDefault = 32 << 20

func (c Config) validate() error {
	switch {
	case c.Reader == nil || c.Mapper == nil || c.Store == nil:
		return errors.New("pipeline: a reader, a mapper and a store are required")
	case c.Sender == nil && !c.DryRun:
		return errors.New("pipeline: a sender is required")
	}
	if err := CheckSuppression(c.Suppression); err != nil {
		return fmt.Errorf("pipeline: suppression %q: %w", c.Suppression, err)
	}
	return nil
}

// withDefaults fills in what the Config leaves unset.
func (c Config) withDefaults() Config {
	c.Suppression = cmpOr(c.Suppression, SuppressionSkip)
	c.MapWorkers = max(1, c.MapWorkers)
	c.Window = max(1, c.Window)
	if c.Fingerprints == nil {
		c.Fingerprints = state.NewFingerprintSet(c.ListID)
	}
	if c.FingerprintFlush <= 0 {
		c.FingerprintFlush = 1 << 20
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = MemoryBudgetDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
