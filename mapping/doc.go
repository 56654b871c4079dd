// Package mapping turns source records into subscriber payloads, or into rejects that say
// why, for one import or sync run.
//
// A run uses it in this order:
//
//	spec, err := mapping.LoadSpec(path)         // or a sync's [syncs.mapping]; or Spec{}
//	spec, unplaced := spec.WithAuto(header)     // no columns given: map the header by its names
//	fields, err := mapping.Resolve(ctx, client, spec) // one GET /custom_fields; creates missing ones
//	m, err := mapping.Compile(spec, header, fields)   // *SpecError: the mapping does not fit
//	dedupe := m.NewDeduper()
//	for each record: row, rej := m.Map(rec); then send, rej := dedupe.Check(row)
//
// A run mapping millions of records uses [Mapper.MapIn] with an [Arena] for each chunk of
// records instead of Map, and resets the Arena once the chunk's rows are done with (what it
// keeps longer, it copies out with [Arena.Adopt]): mapping then allocates nothing.
//
// and `subsync preview` uses [ResolveDryRun] and [Preview] instead, which create and send
// nothing.
//
// # Contract
//
//   - Every source column is mapped, ignored (explicitly), or reported by [Mapper.Unplaced]:
//     no column is dropped silently.
//   - A record becomes either a [Row] whose payload the service accepts, or a [Reject] with
//     the source line (and sheet), the column, the value shortened to 64 characters, a stable
//     code (the Code constants) and a message for a person. Map reports every problem of a
//     row it rejects (Reject.More), the e-mail address's first; the row counts once.
//   - Values are trimmed, inner white space collapsed to one space, and put in Unicode NFC.
//     A value is never truncated: one longer than its field allows is rejected (too_long).
//     Limits: e-mail 254 bytes; first and last name 100 characters; address 200; zip 20;
//     city 100; company 200; a string custom field 255; a tag 100. Phone numbers are E.164
//     (at most 15 digits), and dates, genders, consents and statuses are normalised.
//   - E-mail addresses are lower-cased and checked (a practical syntax, IDN domains allowed).
//     Phone numbers become E.164, numbers without a country code taking the mapping's
//     default_country (+47). Dates are read from dd.mm.yyyy, d.m.yy, yyyy-mm-dd, dd/mm/yyyy or
//     mm/dd/yyyy in the column's order (never guessed per value: see Spec.WithDateOrders) and
//     Excel serial numbers, and sent as YYYY-MM-DD. Consents read yes/no in Norwegian and
//     English and are sent as "1" or "0". Genders are sent as male, female or other.
//   - Custom fields are named by label and sent in their EXTRA<n> slot, their values coerced
//     to the field's datatype: numbers with a dot as decimal separator, dates as YYYY-MM-DD,
//     single_choice and dropdown values as one of the choices (spelled as the field spells
//     it), multiple_choice values split on the column's separator, checked, and joined with
//     commas.
//   - A consent "no" unsubscribes (see [Row]); nothing in a file ever revives a subscriber:
//     a status of reactivate can only be a constant of the mapping.
//   - A [Mapper] is immutable and safe for concurrent use; a [Deduper] is not.
//   - [Mapper.Fingerprint] changes whenever the payloads a mapping builds could change.
package mapping
