package sinktest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCustomFieldSlotsAreNeverReused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var fields []fieldOut
	for _, label := range []string{"One", "Two", "Three"} {
		fields = append(fields, decode[fieldOut](t, b.ok("POST", "/custom_fields", `{"label":"`+label+`","datatype":"string"}`)))
	}
	require.Equal(t, []string{"EXTRA1", "EXTRA2", "EXTRA3"}, []string{fields[0].Value, fields[1].Value, fields[2].Value})

	b.ok("DELETE", "/custom_fields/"+itoa(fields[2].ID), "")
	b.ok("DELETE", "/custom_fields/"+itoa(fields[0].ID), "")
	next := decode[fieldOut](t, b.ok("POST", "/custom_fields", `{"label":"Four","datatype":"number"}`))
	require.Equal(t, "EXTRA4", next.Value, "a deleted slot is not given out again")
	_, slot := b.srv.CreateCustomField("Five", "date")
	require.Equal(t, "EXTRA5", slot)

	all := decode[[]fieldOut](t, b.ok("GET", "/custom_fields", ""))
	require.Len(t, all, 3)
	require.Equal(t, []string{"EXTRA2", "EXTRA4", "EXTRA5"}, []string{all[0].Value, all[1].Value, all[2].Value})

	// A deleted slot is unknown to bulkinsert; a live one is shown on every subscriber.
	list := b.createList("L")
	r := b.bulk("subscriber_list_id="+itoa(list.ID), `[{"email":"a@example.com","EXTRA3":"x"}]`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, r.body, "unknown custom field EXTRA3")
	require.Equal(t, http.StatusOK, b.bulk("subscriber_list_id="+itoa(list.ID), `[{"email":"a@example.com","EXTRA2":"x"}]`).status)
	s, _ := b.srv.SubscriberByEmail("a@example.com")
	show := decode[map[string]any](t, b.ok("GET", "/subscribers/"+itoa(s.ID), ""))
	require.Equal(t, "x", show["EXTRA2"])
	require.Contains(t, show, "EXTRA4")
	require.Nil(t, show["EXTRA4"], "an unset slot is null")
	require.NotContains(t, show, "EXTRA1")
	require.NotContains(t, show, "EXTRA3")
}

func TestCustomFieldDatatypeIsImmutable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := decode[fieldOut](t, b.ok("POST", "/custom_fields", `{"label":"Age","datatype":"number"}`))
	require.Equal(t, "number", f.Datatype)
	require.Nil(t, f.Choices)

	r := b.v2("PATCH", "/custom_fields/"+itoa(f.ID), `{"label":"Age","datatype":"string"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, r.body, "datatype cannot be changed")

	got := decode[fieldOut](t, b.ok("PATCH", "/custom_fields/"+itoa(f.ID), `{"label":"Years","datatype":"number"}`))
	require.Equal(t, fieldOut{ID: f.ID, Label: "Years", Value: "EXTRA1", Datatype: "number"}, got)
	got = decode[fieldOut](t, b.ok("PUT", "/custom_fields/"+itoa(f.ID)+"/", `{"label":"Age in years"}`))
	require.Equal(t, "Age in years", got.Label)
	require.Equal(t, got, decode[fieldOut](t, b.ok("GET", "/custom_fields/"+itoa(f.ID), "")))
}

func TestCustomFieldChoicesAndValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, dt := range []string{"single_choice", "multiple_choice", "dropdown"} {
		f := decode[fieldOut](t, b.ok("POST", "/custom_fields", `{"label":"L","datatype":"`+dt+`","choices":["a","b"]}`))
		require.Equal(t, []string{"a", "b"}, f.Choices, dt)
		f = decode[fieldOut](t, b.ok("PATCH", "/custom_fields/"+itoa(f.ID), `{"choices":["a","b","c"]}`))
		require.Equal(t, []string{"a", "b", "c"}, f.Choices, dt)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"datatype":"string"}`, "label is required"},
		{`{"label":"X"}`, "datatype must be one of"},
		{`{"label":"X","datatype":"text"}`, "datatype must be one of"},
		{`{"label":"X","datatype":"string","choices":["a"]}`, "choices are only for"},
		{`{"label":"X","datatype":"dropdown","choices":["a","a"]}`, "distinct"},
		{`{"label":"X","datatype":"string","extra":1}`, "unknown field"},
	} {
		r := b.v2("POST", "/custom_fields", tt.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, tt.body)
		require.Contains(t, r.body, tt.want, tt.body)
	}
}
