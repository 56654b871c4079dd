// Package sink is the typed HTTP client of the subscriber service: every operation of the
// current interface (v2: lists, subscribers, custom fields, the status feed, bulkinsert) and
// the three legacy (v3) operations, plus the [Subscriber] payload every importer builds.
//
// # Layers
//
// A call to any method passes through these layers, outermost first:
//
//  1. Retry. 408, 429, 5xx and network failures (refused or reset connections, a body cut off
//     mid-way, a per-attempt timeout) are retried, at most [Config.MaxAttempts] attempts within
//     [Config.MaxRetryTime]. The wait is exponential backoff with full jitter, or the
//     Retry-After the service sent (seconds or an HTTP date) when it sent one, on a timer in a
//     select with ctx.Done(). A Retry-After longer than [Config.RetryAfterCap] (or than what is
//     left of the retry budget) is not waited for: the call returns an *[APIError] whose
//     RetryAfter is set, so that a job can snooze. The request body is kept as a []byte and
//     replayed identically on every attempt. At most a few KiB of a failed body are read.
//     400, 401, 403, 404, 422 (and any other 4xx but 408/429) are never retried.
//  2. Rate limit: a token bucket of [Config.RequestsPerSecond] (x/time/rate, Wait(ctx)).
//     It sits inside the retry layer, so every retry spends a token too.
//  3. In-flight limit: at most [Config.MaxInFlight] requests of this Client are on the wire.
//  4. Per-attempt timeout ([Config.Timeout]), covering the request and reading the response.
//  5. Response body cap: a success body larger than [MaxResponseBytes] is an error.
//  6. Headers: Basic auth (user id, API key), User-Agent "subsync/<version>",
//     Content-Type and Accept application/json.
//
// Outcomes are decided by HTTP status, never by the wording of a body. A response that should
// be JSON but is not (an HTML error page from a proxy) gives an error reading
// "unexpected text/html response (HTTP 502): <first bytes>".
//
// # Secrets
//
// The API key is never part of an error, a log line or a panic: [Config] redacts it in
// String and LogValue, base URLs holding credentials are refused by [New], and any text
// taken from a response (status, message, body excerpt) has the key and the Basic token
// (with or without its '=' padding) replaced by the one marker of subsync's masking, xxxxx,
// before it reaches an error.
//
// # Bulk insert
//
// [Client.InsertBatch] sends at most [MaxBatchRows] rows as one bare JSON array, encoded
// with [Subscriber.AppendJSON] into a pooled buffer. When the service refuses a batch with
// 422, the batch is split to isolate the rows it refuses, and every other row is delivered;
// see InsertBatch. [Client.BulkInsert] cuts any number of rows into such batches.
//
// A Client is safe for concurrent use; its rate and in-flight limits are shared by all
// goroutines that use it.
package sink
