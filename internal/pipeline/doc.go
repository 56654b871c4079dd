// Package pipeline is the run engine of an import or a sync: it streams a source into the
// subscriber service in four stages, with a chunk the one value passed between them, and
// keeps the run's books in a ledger, which records where the run is in checkpoints a resumed
// run starts from.
//
//	producer ──chunks──▶ filter ──chunks──▶ batcher ──batches──▶ service
//	                                           │                    │ answers
//	                                           ▼                    ▼
//	                         the engine's loop: ledger ──checkpoints──▶ committer ──▶ state
//
// The producer (producer.go) reads the source into chunks of up to 1000 records and maps
// them on a pool of goroutines (mapping is the costliest step), then hands them on in
// source order. Records at or below the run's checkpoint are only mapped for their
// e-mails, which the deduper observes.
//
// The filter (filter.go) finds duplicate e-mails by the mapping's policy, leaves out (or
// sends keeping their status) the people on the suppression list, which it re-reads when a
// status pull changed it, and, in a delta run, the rows whose payload is what was last
// acknowledged; a row whose source values are unchanged is known unchanged without mapping.
// Every row it does not send becomes an outcome (rejected, duplicate, suppressed,
// unchanged) that waits for the checkpoint.
//
// The batcher (batcher.go) places the rows in batches of at most 1000, one open batch per
// status group, and sends them; it only builds and sends. An open batch far behind the rows
// read is sent early, so that a rare status group does not hold the checkpoint back.
//
// The ledger (ledger.go) owns every batch from sent to free, with one state field (sent,
// answered, counted, written, free), the outcomes awaiting the checkpoint, the checkpoint's
// position and the run's first error. It lets a batch go when the window has room (at most
// Config.Window batches sent and not yet counted by a written checkpoint) and no row of it has
// its e-mail in a sent, unanswered batch, so the last row for an e-mail wins. A checkpoint is
// the highest ordinal below which every row is done, and carries the counts, rejects and
// delta fingerprints of the outcomes it newly covers and of the batches acknowledged since
// the last one, counted whole; the rows of those batches above the checkpoint (a batch
// acknowledged before an earlier one) are recorded as acknowledged, and a resumed run reads
// them again for their e-mails only (Config.Done). A batch's slot is free once its checkpoint
// is written, whatever the batches before it do; a resumed run counts every row once, and
// re-sends at most the batches that were unanswered when the worker died.
//
// The committer (committer.go) writes the checkpoints the ledger hands it, plain values
// copied out of the batches, and saves the delta fingerprints; it never sees a batch. The
// engine (pipeline.go) is the loop between them: it places each chunk, sends the batches
// the batcher closed as the ledger lets them go, and hands the ledger each answer and each
// written checkpoint.
//
// A sync that removes people, or whose mapping has a key column, keeps a roster (roster.go):
// the filter notes every address and key the run reads, gives a row whose key had another
// address that address's suppressed status, and rejects a key on two addresses or an address
// on two keys; the checkpoints record whom the run delivered. Once the rows are done,
// Removals and Unsubscribe (remove.go) unsubscribe the moved addresses and, after a complete
// read, the members the read did not contain.
//
// A chunk (chunk.go) owns the memory its rows' mapping made (a mapping.Arena); the rules of
// that memory are all in that file. An Engine is built with New and runs once, with Run, or
// as a dry run with DryRun.
package pipeline
