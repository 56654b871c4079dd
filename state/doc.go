// Package state is what the subsync worker remembers between runs, kept in subsync's own
// tables in the queue's database (SQLite or Postgres):
//
//   - run history: one row per job, with counts, timings, outcome, the error of the last
//     attempt, the checkpoint (source position) and a lease naming the worker that owns it;
//   - rejects: the rows a run did not send, with line, column, value, code and reason;
//   - the suppression list and the status change log filled by status pulls, the status
//     cursor, and pending write-backs to the source. The suppression list has a version,
//     bumped in the transaction of every change, so a long run re-reads the list (into a
//     [SuppressionSet]) only when it changed, and checks every chunk of rows against it;
//   - delta fingerprints: an 8-byte payload hash and an 8-byte source-values hash per (list,
//     8-byte e-mail hash), stored as 4096 sorted buckets per list, each in a few parts (a
//     large save appends a part to each bucket rather than rewriting it), plus a few recent
//     changes as rows of their own, so a scheduled sync sends only rows whose payload changed
//     and a million fingerprints load or save in one pass over 24 MB;
//   - staged files: a local file queued on one machine and worked on another, gzip-compressed
//     in chunks.
//
// The contract the jobs package relies on:
//
//   - Migrate is idempotent and safe to call from several processes at once; versions are
//     recorded in subsync_migration.
//   - A run is claimed with [Store.ClaimRun] before it is worked. The claim is a lease with a
//     time to live measured on the database's clock; it is renewed by [Store.RenewLease] and by
//     every [Store.Checkpoint]. Every write of a worker is fenced by its owner token: once
//     another worker has taken an expired lease over, the old owner's writes fail with
//     [ErrLeaseLost] and change nothing.
//   - [Store.Checkpoint] is one transaction: the new position, the count deltas and the
//     rejects of the rows it covers. A run resumed after a crash therefore counts and rejects
//     every row exactly once. Fingerprints are saved in large batches and may lag: one lost
//     in a crash only makes the next sync send that row again.
//   - Nothing secret is written: runs carry names, paths and list ids, never an API key or a
//     DSN.
//
// Times are stored as Unix microseconds (UTC) in BIGINT columns on both databases, so every
// query is the same on both and comparisons never depend on a text format.
package state
