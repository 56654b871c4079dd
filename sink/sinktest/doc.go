// Package sinktest is a strict in-process emulator of the subscriber service, in the manner of
// net/http/httptest: an Emulator is an http.Handler serving the current interface (v2) under
// V2Prefix and the three legacy operations (v3) under V3Prefix, over one store; NewServer
// starts one on a local port for a test; cmd/subsim serves one standalone.
//
// # Known ways the emulator may differ from the real service
//
// The spec leaves much "not shown"; the emulator implements the assumptions of design.md, and
// where the real service may well differ:
//
//   - Validation is stricter than the real service is known to be. A row key that is not a
//     documented field (email, firstname, lastname, address, zip, city, phone, company,
//     birthday, gender, the four consent fields, EXTRA<n> of an existing custom field, tags)
//     is refused, so a client typo shows up; the real service may ignore it. Requests with a
//     body must carry Content-Type application/json (else 415).
//   - An unknown list in bulkinsert or single create is a 422 "unknown list N"; the real
//     service may answer 404. Unknown ids on show, update and delete are a 404.
//   - A 422 answers exactly the spec's {"status":"422 Unprocessable entity"}. WithRowMessages
//     adds a message "row N: reason" (N is the 0-based row of the request body; 0 for a
//     problem with the query or the body as a whole, 1000 for a 1001st row), which the real
//     service is not known to give.
//   - Bulkinsert and single create read the list from subscriber_list_id=N or
//     subscriber_list_id[]=N (only the latter with WithListIDArrayOnly). Single create reads
//     status from the body, else the query (only the query with WithStatusFromQuery). Updates
//     take PATCH or PUT (only PUT with WithPutOnly). POST /subscribers/by_email takes
//     {"email": …} and answers one subscriber or 404. Switches lists every alternative.
//   - Empty strings and nulls in a row never clear a stored value; the real service may clear.
//   - The status feed records explicit status changes only: a membership created or changed
//     by a status/status_mobile query, a status in a single create, the unsubscribe
//     endpoint, or SetStatus. A new membership that becomes active by default is not a change.
//     The real feed may also list new subscriptions, and may page or cap.
//   - The unsubscribe endpoint sets the e-mail status of every membership; status_mobile stays.
//   - A single create with "status": "active" in the body revives an unsubscribed or
//     bounced membership (the spec says the given status is applied); bulkinsert's
//     status=active does not unless WithActiveRevives(true). A push without a status
//     (bulk or single) leaves an existing membership's status as it is, unless
//     WithOmissionRevives(true) (the seed's "status omitted → active", applied to existing
//     people too).
//   - GET /subscribers/by_list rows carry the membership's statuses as email_status and
//     phone_status (the public PHP client's names); the status query filters them (not
//     with WithByListIgnoresStatus).
//   - Consent fields take any string, number or boolean, kept as its text (only true/false
//     with WithConsentBooleans); gender takes any string (only the given values with
//     WithGenderValues); a multiple_choice value is an array or a comma-separated string
//     (only an array with WithMultipleChoiceArrays).
//   - multiple_choice values are stored as the choices joined by "," (a row may give a JSON
//     array of strings or a comma-separated string); choices match exactly.
//   - Custom field labels need not be unique. Slots start at EXTRA1 and are never reused.
//   - v3: phone is "" and mobile holds the v2 phone; age is ""; the k-th date custom field ever
//     created is extra_date<k> (k ≤ 5) as an ISO 8601 time at midnight UTC; other fields in
//     slots 1..15 are extra<n>.
//   - The e-mail shown is the trimmed form first given; the real service may lower-case it.
//   - No paging on GET /subscriberlists or /custom_fields. /subscriberstatus answers a bare
//     array by default; WithStatusWrapped, WithStatusWrapKey and WithStatusPaged change its
//     shape, WithStatusLinkPaged pages it through a Link header only, WithStatusDays reads
//     its from_date/to_date as whole days.
//
// # Data model
//
// A subscriber is unique by e-mail (trimmed, compared case-insensitively) and has an id. It
// holds its fields, its tags and one membership per list, each with a status and a
// status_mobile (active, unsubscribed or bounce) and the time of its last status change.
//
// Bulkinsert and single create upsert by e-mail into the list(s) of the query
// (subscriber_list_id, or subscriber_list_id[] repeated): the given non-empty fields
// overwrite, the others stay. Without status a new membership is active and an existing one
// keeps its status. status (and status_mobile) ∈ active, unsubscribed, bounce, reactivate
// applies to every row: unsubscribed and bounce set it, reactivate makes it active,
// active makes it active except that an unsubscribed or bounced membership stays so (unless
// WithActiveRevives). tag=replace (the default) replaces the tags of rows that carry "tags",
// tag=merge adds them.
//
// A list counts subscriber_emails = its active memberships (every subscriber has an e-mail)
// and subscriber_sms = its memberships of subscribers with a phone whose status_mobile is
// active. Counts are kept true through upserts, status changes and deletes. Deleting a list
// (v2 or v3) removes its memberships; deleting a subscriber (v2 or v3) removes it; a later
// upsert of the same e-mail creates a new subscriber with a new id.
//
// A custom field takes the next EXTRA<n> slot, never one used before; its datatype cannot
// change; single_choice, multiple_choice and dropdown carry choices. A row's EXTRA<n> must
// name an existing slot and fit its datatype: number parses as a decimal number, date is
// YYYY-MM-DD, a choice is one of the choices.
//
// # Validation
//
// A bulkinsert is refused as a whole, with nothing applied, with 422 and
// {"status":"422 Unprocessable entity"} (with WithRowMessages also "message":"row N: reason")
// for: more than MaxBulkRows
// rows; a body that is not a bare JSON array of objects (an object, empty, malformed); a row
// without a valid e-mail; an unknown field or EXTRA<n> slot; a bad birthday (not YYYY-MM-DD or
// no such date); a custom field value that does not fit its datatype; an unknown status,
// status_mobile or tag; a missing or unknown list. Acks are {"status":"200 Success"}; a single
// create answers {"status":"200 Success","id":N}; an unknown id {"status":"404 Not found"}.
// Every route of both interfaces needs HTTP Basic auth: otherwise 401 with
// WWW-Authenticate: Basic realm="subscribers" and {"status":"401 Unauthorized"} (plain text
// with WithPlainText401). Timestamps are ISO 8601 UTC with milliseconds (TimeFormat), from the
// clock of WithClock.
//
// # Faults
//
// Faults injects latency, 5xx (JSON or HTML bodies), 429 with Retry-After, a requests-per-second
// cap and dropped connections, reproducibly from a seed; see Faults for which faults can have
// applied their effect (only a drop). Requests lists what was received and answered.
package sinktest
