package sinktest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLegacyShowRenamesFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.createList("L")
	b.srv.CreateCustomField("Score", "number")       // EXTRA1 -> extra1
	b.srv.CreateCustomField("Joined", "date")        // EXTRA2 -> extra_date1
	b.srv.CreateCustomField("Size", "dropdown", "M") // EXTRA3 -> extra3
	b.srv.CreateCustomField("Renewal", "date")       // EXTRA4 -> extra_date2
	b.ok("POST", "/subscribers/bulkinsert?subscriber_list_id="+itoa(l.ID), `[{"email":"v3@example.com","firstname":"Vee",
		"phone":"+4790000000","company":"ACME","city":"Bergen","EXTRA1":"7","EXTRA2":"2024-01-31","EXTRA3":"M","EXTRA4":"2026-06-01"}]`)
	r := b.v3("GET", "/subscribers/1")
	require.Equal(t, 200, r.status, r.body)
	require.JSONEq(t, `{"id":1,"email":"v3@example.com","firstname":"Vee","lastname":"","address":"","zip":"","city":"Bergen",
		"phone":"","mobile":"+4790000000","firm":"ACME","age":"","gender":"",
		"extra1":"7","extra2":"","extra3":"M","extra4":"","extra5":"","extra6":"","extra7":"","extra8":"","extra9":"",
		"extra10":"","extra11":"","extra12":"","extra13":"","extra14":"","extra15":"",
		"extra_date1":"2024-01-31T00:00:00.000Z","extra_date2":"2026-06-01T00:00:00.000Z","extra_date3":"","extra_date4":"","extra_date5":"",
		"date_created":"2025-03-10T12:00:00.000Z","date_updated":"2025-03-10T12:00:00.000Z"}`, r.body)
	require.Equal(t, 405, b.v3("GET", "/subscriberlists/1").status, "v3 has no list show")
	require.Equal(t, 405, b.v3("POST", "/subscribers/1").status)
}
