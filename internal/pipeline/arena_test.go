package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// TestPipelineSendsRowsAsMapped: every row is sent as Map makes it, also when its batch goes
// out after the chunk it was mapped in was recycled and the next records were mapped in the
// same memory (the values mapping makes, a lower-cased address, a phone number, dates and
// the consent and custom fields, live in the chunk's Arena until a batch adopts them).
func TestPipelineSendsRowsAsMapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 5_500 // six batches, six chunks
	var b strings.Builder
	b.WriteString("E-post,Fornavn,Mobil,Fødselsdato,Nyhetsbrev,Innmeldt\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Person%d@Example.COM,Ola%d,9%07d,%d.%d.19%02d,%s,0%d.03.2020\n",
			i, i, i, i%28+1, i%12+1, i%100, []string{"ja", "nei", ""}[i%3], i%9+1)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, _, _ := testPipeline(t, b.String(), sender)
	spec, err := mapping.ParseSpec([]byte(`
[columns]
"E-post" = "email"
Fornavn = "firstname"
Mobil = "phone"
"Fødselsdato" = "birthday"
Nyhetsbrev = "SAMTYKKEEPOST"
Innmeldt = "custom:Innmeldt"
`))
	require.NoError(t, err)
	withMapping(t, &cfg, spec, mapping.NewFields([]sink.CustomField{
		{ID: 1, Label: "Innmeldt", Value: "EXTRA5", Datatype: sink.DatatypeDate}}))
	m := cfg.Mapper
	cfg.Window = 8 // every batch goes out while the next chunks are mapped
	p := newEngine(t, cfg)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()
	var calls []heldCall
	for range 6 { // the chunks of the first five batches are recycled by now
		calls = append(calls, <-sender.calls)
	}
	var sent []sink.Subscriber // the rows as they are now, before any batch is acknowledged
	for _, c := range calls {
		for _, r := range c.rows {
			r.Fields = slices.Clone(r.Fields)
			sent = append(sent, r)
		}
	}
	for _, c := range calls {
		c.answer <- nil
	}
	require.NoError(t, <-done)

	// What Map makes of each record, read again from the same text.
	path := filepath.Join(t.TempDir(), "again.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	r, err := sources.Open(ctx, sources.Config{Path: path})
	require.NoError(t, err)
	defer r.Close()
	var want []sink.Subscriber
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		row, rej := m.Map(rec)
		require.Nil(t, rej)
		want = append(want, row.Sub)
	}
	require.Len(t, want, n)
	require.Len(t, sent, n)
	// The batches of the two status groups (a "nei" unsubscribes) went out in either order.
	byEmail := func(a, b sink.Subscriber) int { return strings.Compare(a.Email, b.Email) }
	slices.SortFunc(want, byEmail)
	slices.SortFunc(sent, byEmail)
	for i := range want {
		require.Equal(t, want[i], sent[i])
	}
}

// TestPipelineKeepsValuesMappingMade: what mapping makes in a chunk's memory and the run
// keeps after the chunk is recycled is kept whole: tags whose spaces were collapsed, in
// batches held until every chunk is done; the value of a reject, written at a checkpoint
// after that: a lower-cased duplicate e-mail, a tag too long.
func TestPipelineKeepsValuesMappingMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b strings.Builder
	b.WriteString("E-post,Grupper\n")
	longTag := strings.Repeat("ab  ", 40) + "c" // 121 characters once collapsed
	for i := 1; i <= 3000; i++ {
		email := fmt.Sprintf("Person%d@Example.COM", (i-1)%2000+1) // rows 2001-3000 repeat 1-1000
		tags := "VIP;Nye  kunder"
		if i%500 == 3 {
			tags = "VIP;" + longTag
		}
		fmt.Fprintf(&b, "%s,%s\n", email, tags)
	}
	sender := &holdingSender{calls: make(chan heldCall)}
	cfg, store, run := testPipeline(t, b.String(), sender)
	spec, err := mapping.ParseSpec([]byte(`
duplicates = "reject"
[columns]
"E-post" = "email"
Grupper = { to = "tags", separator = ";" }
`))
	require.NoError(t, err)
	withMapping(t, &cfg, spec, mapping.Fields{})
	cfg.Window = 8
	p := newEngine(t, cfg)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, 0) }()
	calls := []heldCall{<-sender.calls, <-sender.calls} // 1996 rows: rows 3, 503, 1003 and 1503 are rejected
	sent := 0
	for _, c := range calls {
		for _, r := range c.rows {
			require.Equal(t, []string{"VIP", "Nye kunder"}, r.Tags, r.Email)
			sent++
		}
	}
	require.Equal(t, 1996, sent)
	for _, c := range calls {
		c.answer <- nil
	}
	require.NoError(t, <-done)

	var tooLong, dups int
	require.NoError(t, store.Rejects(ctx, run.ID, func(rj state.Reject) error {
		i := rj.Line - 1
		switch rj.Code {
		case mapping.CodeTooLong:
			require.Equal(t, 3, i%500, "line %d", rj.Line)
			require.True(t, strings.HasPrefix(rj.Value, "ab ab ab"), "line %d: %q", rj.Line, rj.Value)
			tooLong++
		case mapping.CodeDuplicateEmail:
			require.Equal(t, fmt.Sprintf("person%d@example.com", i-2000), rj.Value, "line %d", rj.Line)
			dups++
		default:
			t.Fatalf("line %d: %+v", rj.Line, rj)
		}
		return nil
	}))
	require.Equal(t, 6, tooLong)
	require.Equal(t, 1000-2, dups) // rows 2003 and 2503 are too long first
}
