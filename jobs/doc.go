// Package jobs runs subsync's work as River jobs on SQLite (embedded, one machine) or
// Postgres (any number of workers): one-off imports, named syncs on cron schedules, and
// status pulls, with run history, checkpoints and rejects in package state.
//
// # Contract
//
//   - Open opens the database and applies River's and subsync's migrations (Migrate does only
//     that). Run works jobs until its context ends, then stops taking jobs, lets in-flight
//     batches finish for up to Config.ShutdownTimeout, keeps their checkpoints, and returns
//     nil. It serves /metrics and /healthz on Config.MetricsAddr.
//   - Job kinds: import (ImportArgs), sync (SyncArgs), status_pull (StatusPullArgs). Unique
//     options keep at most one queued or running job per sync name, and one status pull.
//     Schedules are River periodic jobs inserted by the elected leader only, so a fleet on one
//     Postgres runs each tick once.
//   - Delta: after each acknowledged batch, the fingerprint of every row is stored per (list,
//     e-mail): a hash of its payload and status, and a hash of the source values it was
//     mapped from (with the mapping's fingerprint). A sync (not an import, not --full) skips
//     rows whose payload is what was last acknowledged, counting them unchanged; a row whose
//     source values hash as stored is found unchanged without being mapped. A changed
//     mapping changes every fingerprint. A later row for an e-mail seen earlier in the run is
//     always sent, so it wins.
//   - Suppression: every chunk of rows is checked against the suppression list (re-read when
//     a status pull changed it). A suppressed row is never sent as active: it is skipped
//     (skip) or sent with its suppressed status (update-keep-status), and counted as
//     suppressed either way. PlanSync and PlanImport are dry runs of the same pipeline.
//   - Removals and moves: a sync with SyncSpec.Removed = RemovedUnsubscribe, or whose mapping
//     maps a column to external_id (its key), keeps a roster of whom it delivered (package
//     state), written with the checkpoints. Once its rows are done it unsubscribes (status
//     form, one recorded request of at most 1000 at a time, fenced by the lease) the old
//     addresses of keys that came with a new one, and, after a complete read that was not
//     incremental, the members the read no longer contains, unless more than
//     SyncSpec.MaxRemovals would go and SyncArgs.AllowRemovals is not set: the run then fails
//     (RemovalsStoppedError) having unsubscribed none of them.
//   - A run is the engine of package internal/pipeline (producer, filter, batcher,
//     committer); jobs claims the run, fills the engine's Config and records its outcome.
//     It streams source → mapping → dedupe → suppression and delta filters → batches of
//     at most 1000 (one per status group) → bulkinsert, with up to Config.BatchesInFlight
//     batches sent and not yet checkpointed. After each acknowledged batch the checkpoint
//     (the highest ordinal below which every row is done) is written with the counts and
//     rejects of the rows it covers. A retried run resumes from its checkpoint: no row is
//     lost, rows are counted once, and a killed worker's replacement sends again at most the
//     batches that were in flight. A row waits for the acknowledgement of any in-flight batch
//     holding the same e-mail, so the last row for an e-mail wins.
//   - A worker that dies is replaced through its run's lease: a lease not renewed for
//     Config.LeaseTTL (renewed every third of it) lets any worker's sweeper hand the job back
//     to River, and the next attempt resumes. Every write of an attempt is fenced by its
//     lease, so a worker that was merely slow cannot corrupt a run another took over.
//   - Permanent failures (401/403/404/422 from the service, a missing file, an invalid
//     mapping, a workbook past a bound of the reader: sources.ErrTooLarge) fail the run at once (river.JobCancel) with a message for people; transient
//     ones retry with River's backoff; a 429 whose Retry-After exceeds the client's cap
//     snoozes the job for that long.
//   - Job args carry names, paths and list ids, never a secret: the worker takes the API key
//     and DSNs from its own Config. On Postgres an imported local file is staged into the
//     database and deleted when its run ends, unless it is shared (ImportArgs.Shared, or
//     under one of Config.SharedDirs): then its path is queued, and a worker that cannot
//     read it fails the run naming the file and the setting.
//   - CancelJob cancels a queued job at once, and a running one within a lease heartbeat
//     (LeaseTTL/3) on either database: rows already acknowledged stay sent and counted.
//     The sweeper also closes runs left claimed by a dead worker whose job then ended.
//   - Wait follows a job's run and, when no worker (Run) of the database is alive by its
//     heartbeat, works it in-process.
//
// `go run ./internal/e2ebench` measures an import of a million generated contacts (CSV and XLSX)
// against the emulator's raw limit, and the worker's peak memory; `-mode delta` measures a
// sync of them and a second sync after 1% changed.
package jobs
