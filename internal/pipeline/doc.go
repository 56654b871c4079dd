// Package pipeline is the run engine of an import or a sync: it streams a source into the
// subscriber service in four stages, with a chunk the one value passed between them, and
// records where the run is in checkpoints a resumed run starts from.
//
//	producer ──chunks──▶ filter ──chunks──▶ batcher ──batches──▶ service
//	                                           │ acknowledgements
//	                                           ▼
//	                                       committer ──checkpoints──▶ state
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
// status group, and sends them with at most Config.Window batches sent and not yet counted by
// a written checkpoint. A row whose e-mail is in a sent, unacknowledged batch waits for it, so the
// last row for an e-mail wins; an open batch far behind the rows read is sent early, so
// that a rare status group does not hold the checkpoint back.
//
// The committer (committer.go) turns acknowledgements into checkpoints. A checkpoint is the
// highest ordinal below which every row is done, and carries the counts, rejects and delta
// fingerprints of the outcomes it newly covers and of the batches acknowledged since the
// last one, counted whole; the rows of those batches above the checkpoint (a batch
// acknowledged before an earlier one) are recorded as acknowledged, and a resumed run reads
// them again for their e-mails only (Config.Done). A batch's slot is free once its checkpoint
// is written, whatever the batches before it do; a resumed run counts every row once, and
// re-sends at most the batches that were unanswered when the worker died.
//
// A sync that removes people, or whose mapping has a key column, keeps a roster (roster.go):
// the filter notes every address and key the run reads, gives a row whose key had another
// address that address's suppressed status, and rejects a key on two addresses or an address
// on two keys; the committer records whom the run delivered. Once the rows are done,
// Removals and Unsubscribe (remove.go) unsubscribe the moved addresses and, after a complete
// read, the members the read did not contain.
//
// A chunk (chunk.go) owns the memory its rows' mapping made (a mapping.Arena); the rules of
// that memory are all in that file. An Engine is built with New and runs once, with Run, or
// as a dry run with DryRun.
package pipeline
