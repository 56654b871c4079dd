package mapping

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sink/sinktest"
	"github.com/subsync/subsync/sources"
)

// newService starts the emulator and a real client for it.
func newService(t *testing.T) (*sinktest.Server, *sink.Client) {
	t.Helper()
	srv := sinktest.NewServer(t)
	c, err := sink.New(sink.Config{BaseURL: srv.URL, UserID: srv.User, APIKey: srv.Key, HTTPClient: srv.Client(), RequestsPerSecond: -1})
	require.NoError(t, err)
	return srv, c
}

// fieldRequests counts the requests the emulator answered on /custom_fields, by method.
func fieldRequests(srv *sinktest.Server) map[string]int {
	n := map[string]int{}
	for _, r := range srv.Requests() {
		if r.Path == sinktest.V2Prefix+"/custom_fields" {
			n[r.Method]++
		}
	}
	return n
}

const customSpec = `
[columns]
"E-post"     = "email"
"Medlemsnr"  = { custom = "Medlemsnummer", datatype = "number" }
"Interesser" = { custom = "Interesser", datatype = "multiple_choice", choices = ["Ski", "Fotball", "Håndball"], separator = ";" }
"Nivå"       = "custom:Nivå"
[constants]
"custom:Kilde" = "Import"
`

var customHeader = []string{"E-post", "Medlemsnr", "Interesser", "Nivå"}

func TestResolveExistingFieldsAndSend(t *testing.T) {
	t.Parallel()
	srv, client := newService(t)
	srv.CreateCustomField("Medlemsnummer", sink.DatatypeNumber)
	srv.CreateCustomField("Interesser", sink.DatatypeMultipleChoice, "Ski", "Fotball", "Håndball")
	srv.CreateCustomField("Nivå", sink.DatatypeSingleChoice, "Gull", "Sølv")
	srv.CreateCustomField("Kilde", sink.DatatypeString)
	spec, err := ParseSpec([]byte(customSpec))
	require.NoError(t, err)

	fields, err := Resolve(t.Context(), client, spec)
	require.NoError(t, err)
	require.Empty(t, fields.Created())
	require.Equal(t, map[string]int{"GET": 1}, fieldRequests(srv), "one GET /custom_fields per run")

	m, err := compile(spec, customHeader, fields, testToday)
	require.NoError(t, err)
	plan := m.Plan()
	require.Equal(t, PlanEntry{Column: "Medlemsnr", Target: "custom:Medlemsnummer", Slot: "EXTRA1", Datatype: sink.DatatypeNumber}, plan[1])

	// The payloads pass the emulator's strict checks.
	row, rej := m.Map(sources.Record{Line: 2, Values: []string{"kari@example.no", "1 024", "ski; HÅNDBALL", "sølv"}})
	require.Nil(t, rej)
	listID := srv.CreateList("Medlemmer")
	res, err := client.BulkInsert(t.Context(), sink.BulkOptions{ListID: listID}, []sink.Subscriber{row.Sub})
	require.NoError(t, err)
	require.Empty(t, res.Rejects)
	stored, ok := srv.SubscriberByEmail("kari@example.no")
	require.True(t, ok)
	require.Equal(t, map[string]string{"EXTRA1": "1024", "EXTRA2": "Ski,Håndball", "EXTRA3": "Sølv", "EXTRA4": "Import"}, stored.Fields)
}

func TestResolveCreatesMissing(t *testing.T) {
	t.Parallel()
	srv, client := newService(t)
	srv.CreateCustomField("Medlemsnummer", sink.DatatypeNumber)
	spec, err := ParseSpec([]byte("create_missing = true\n" + customSpec))
	require.NoError(t, err)

	fields, err := Resolve(t.Context(), client, spec)
	require.NoError(t, err)
	created := fields.Created()
	require.Len(t, created, 3)
	byLabel := map[string]sink.CustomField{}
	for _, f := range created {
		byLabel[f.Label] = f
	}
	require.Equal(t, sink.DatatypeMultipleChoice, byLabel["Interesser"].Datatype)
	require.Equal(t, []string{"Ski", "Fotball", "Håndball"}, byLabel["Interesser"].Choices)
	require.Equal(t, sink.DatatypeString, byLabel["Nivå"].Datatype, "no datatype given: string")
	require.Equal(t, sink.DatatypeString, byLabel["Kilde"].Datatype)
	require.Equal(t, map[string]int{"GET": 1, "POST": 3}, fieldRequests(srv))

	m, err := compile(spec, customHeader, fields, testToday)
	require.NoError(t, err)
	row, rej := m.Map(sources.Record{Values: []string{"a@b.no", "7", "Fotball", "hva som helst"}})
	require.Nil(t, rej)
	require.Equal(t, "Fotball", row.Sub.Field(byLabel["Interesser"].Value))
	require.Equal(t, "hva som helst", row.Sub.Field(byLabel["Nivå"].Value))

	// A second run finds them all.
	srv.ResetRequests()
	again, err := Resolve(t.Context(), client, spec)
	require.NoError(t, err)
	require.Empty(t, again.Created())
	require.Equal(t, map[string]int{"GET": 1}, fieldRequests(srv))
}

func TestResolveMissingWithoutCreate(t *testing.T) {
	t.Parallel()
	srv, client := newService(t)
	srv.CreateCustomField("medlemsnummer", sink.DatatypeString)
	spec, err := ParseSpec([]byte(customSpec))
	require.NoError(t, err)
	fields, err := Resolve(t.Context(), client, spec)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"GET": 1}, fieldRequests(srv), "nothing created")

	_, err = compile(spec, customHeader, fields, testToday)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.ErrorContains(t, err, `columns.Medlemsnr: custom field "Medlemsnummer" is string in the service, not number`, "labels match ignoring case")
	require.ErrorContains(t, err, `columns.Interesser: the service has no custom field "Interesser" (create it, or set create_missing = true)`)
	require.ErrorContains(t, err, `columns."Nivå": the service has no custom field "Nivå"`)
	require.ErrorContains(t, err, `constants."custom:Kilde": the service has no custom field "Kilde"`)
}

func TestResolveDryRun(t *testing.T) {
	t.Parallel()
	srv, client := newService(t)
	srv.CreateCustomField("Medlemsnummer", sink.DatatypeNumber)
	spec, err := ParseSpec([]byte("create_missing = true\n" + customSpec))
	require.NoError(t, err)
	fields, err := ResolveDryRun(t.Context(), client, spec)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"GET": 1}, fieldRequests(srv), "a dry run creates nothing")
	require.Len(t, fields.Planned(), 3)

	m, err := compile(spec, customHeader, fields, testToday)
	require.NoError(t, err)
	require.Equal(t, PlanEntry{Column: "Interesser", Target: "custom:Interesser", Datatype: sink.DatatypeMultipleChoice, Note: "would be created"}, m.Plan()[2])
	row, rej := m.Map(sources.Record{Values: []string{"a@b.no", "7", "Golf", ""}})
	require.Nil(t, row.Sub.Fields)
	require.Equal(t, CodeInvalidChoice, rej.Code, "the mapping's choices check values of a field to be created")
}

func TestResolveWithoutCustomFieldsAsksNothing(t *testing.T) {
	t.Parallel()
	fs := &fieldServiceStub{} // any call fails the test
	fields, err := Resolve(t.Context(), fs, Spec{Columns: map[string]Column{"E-post": {To: sink.FieldEmail}}})
	require.NoError(t, err)
	require.Empty(t, fields.All())
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	spec, err := ParseSpec([]byte("create_missing = true\n" + customSpec))
	require.NoError(t, err)
	boom := errors.New("503 Service Unavailable")

	_, err = Resolve(t.Context(), &fieldServiceStub{list: func(context.Context) ([]sink.CustomField, error) { return nil, boom }}, spec)
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "fetch custom fields")

	_, err = Resolve(t.Context(), &fieldServiceStub{
		list:   func(context.Context) ([]sink.CustomField, error) { return nil, nil },
		create: func(context.Context, sink.CustomField) (sink.CustomField, error) { return sink.CustomField{}, boom },
	}, spec)
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, `create custom field "Interesser" (multiple_choice)`)

	conflict := Spec{CreateMissing: true, Columns: map[string]Column{
		"A": {To: TargetCustom, Custom: "X", Datatype: sink.DatatypeNumber},
		"B": {To: TargetCustom, Custom: "X", Datatype: sink.DatatypeDate},
	}}
	_, err = Resolve(t.Context(), &fieldServiceStub{}, conflict)
	require.ErrorContains(t, err, `columns.B: custom field "X" is date here but number at columns.A`)
}

func TestFieldsLookupAmbiguous(t *testing.T) {
	t.Parallel()
	f := NewFields([]sink.CustomField{{Label: "Kilde", Value: "EXTRA1"}, {Label: "KILDE", Value: "EXTRA2"}})
	got, ok, err := f.lookup("Kilde")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "EXTRA1", got.Value, "an exact label wins")
	_, _, err = f.lookup("kilde")
	require.ErrorContains(t, err, `custom field label "kilde" matches 2 fields (EXTRA1, EXTRA2)`)
}

// fieldServiceStub is a FieldService whose methods are functions; a method without one fails
// the test.
type fieldServiceStub struct {
	list   func(context.Context) ([]sink.CustomField, error)
	create func(context.Context, sink.CustomField) (sink.CustomField, error)
}

func (s *fieldServiceStub) CustomFields(ctx context.Context) ([]sink.CustomField, error) {
	if s.list == nil {
		panic("fieldServiceStub: CustomFields called but not set")
	}
	return s.list(ctx)
}

func (s *fieldServiceStub) CreateCustomField(ctx context.Context, f sink.CustomField) (sink.CustomField, error) {
	if s.create == nil {
		panic("fieldServiceStub: CreateCustomField called but not set")
	}
	return s.create(ctx, f)
}
