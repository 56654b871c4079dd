package sinktest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

// TestOmissionRevives: with WithOmissionRevives, a push without a status — bulk or single —
// makes an unsubscribed or bounced membership active (as the seed says a single create/update
// without a status does); by default it leaves it as it is.
func TestOmissionRevives(t *testing.T) {
	t.Parallel()
	rows := `[{"email":"active@example.com"},{"email":"unsub@example.com"},{"email":"bounce@example.com"}]`
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		b, q := statusSetup(t)
		b.ok("POST", "/subscribers/bulkinsert?"+q, rows)
		b.ok("POST", "/subscribers?"+q, `{"email":"unsub@example.com"}`)
		require.Equal(t, []string{"active", "unsubscribed", "bounce"}, statuses(b, 1))
	})
	t.Run("bulk", func(t *testing.T) {
		t.Parallel()
		b, q := statusSetup(t, sinktest.WithOmissionRevives(true))
		b.ok("POST", "/subscribers/bulkinsert?"+q, rows)
		require.Equal(t, []string{"active", "active", "active"}, statuses(b, 1))
	})
	t.Run("single", func(t *testing.T) {
		t.Parallel()
		b, q := statusSetup(t, sinktest.WithOmissionRevives(true))
		b.ok("POST", "/subscribers?"+q, `{"email":"unsub@example.com"}`)
		require.Equal(t, []string{"active", "active", "bounce"}, statuses(b, 1))
		// A status given is applied: the person stays unsubscribed.
		b.ok("POST", "/subscribers?"+q, `{"email":"bounce@example.com","status":"bounce"}`)
		require.Equal(t, "bounce", b.status("bounce@example.com", 1))
	})
	t.Run("a status given keeps them", func(t *testing.T) {
		t.Parallel()
		b, q := statusSetup(t, sinktest.WithOmissionRevives(true))
		b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=unsubscribed", `[{"email":"unsub@example.com"}]`)
		b.ok("POST", "/subscribers/bulkinsert?"+q+"&status=bounce", `[{"email":"bounce@example.com"}]`)
		require.Equal(t, []string{"active", "unsubscribed", "bounce"}, statuses(b, 1))
	})
}

// TestByListShowsStatuses: by_list rows carry their own statuses in the list (email_status,
// phone_status); WithByListIgnoresStatus answers every row whatever status is asked for.
func TestByListShowsStatuses(t *testing.T) {
	t.Parallel()
	rowStatuses := func(b *testBundle, query string) map[string]string {
		out := map[string]string{}
		for _, s := range decode[[]map[string]any](t, b.ok("GET", "/subscribers/by_list?list_id=1"+query, "")) {
			out[s["email"].(string)] = s["email_status"].(string)
			require.Equal(t, "active", s["phone_status"])
		}
		return out
	}
	b, _ := statusSetup(t)
	require.Equal(t, map[string]string{"unsub@example.com": "unsubscribed"}, rowStatuses(b, "&status=unsubscribed"))
	all, _ := statusSetup(t, sinktest.WithByListIgnoresStatus(true))
	require.Equal(t, map[string]string{"active@example.com": "active", "unsub@example.com": "unsubscribed",
		"bounce@example.com": "bounce"}, rowStatuses(all, "&status=unsubscribed"))
}

// TestValueRuleSwitches: the switches that take stricter value forms refuse the others with
// 422, in bulk and single create alike, and take their own form.
func TestValueRuleSwitches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		opt      sinktest.Option
		field    string // creates a multiple_choice field "Interesser" with choices Ski, Fotball
		refused  string
		accepted string
		reason   string
	}{
		{"consent booleans", sinktest.WithConsentBooleans(true), "",
			`{"email":"a@example.com","SAMTYKKEEPOST":"1"}`, `{"email":"a@example.com","SAMTYKKEEPOST":true}`,
			`SAMTYKKEEPOST must be true or false, not \"1\"`},
		{"gender values", sinktest.WithGenderValues("male", "female"), "",
			`{"email":"a@example.com","gender":"other"}`, `{"email":"a@example.com","gender":"female"}`,
			`gender \"other\" is not one of male, female`},
		{"multiple choice arrays", sinktest.WithMultipleChoiceArrays(true), "Interesser",
			`{"email":"a@example.com","EXTRA1":"Ski,Fotball"}`, `{"email":"a@example.com","EXTRA1":["Ski","Fotball"]}`,
			`EXTRA1 (multiple_choice field \"Interesser\") must be an array of strings`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, on := range []bool{false, true} {
				opts := []sinktest.Option{}
				if on {
					opts = append(opts, tc.opt)
				}
				b := setup(t, opts...)
				q := "subscriber_list_id=" + itoa(b.createList("L").ID)
				if tc.field != "" {
					b.ok("POST", "/custom_fields", `{"label":"Interesser","datatype":"multiple_choice","choices":["Ski","Fotball"]}`)
				}
				b.ok("POST", "/subscribers/bulkinsert?"+q, "["+tc.accepted+"]")
				b.ok("POST", "/subscribers?"+q, tc.accepted)
				if !on {
					b.ok("POST", "/subscribers/bulkinsert?"+q, "["+tc.refused+"]")
					continue
				}
				r := b.bulk(q, "["+tc.refused+"]")
				require.Equal(t, http.StatusUnprocessableEntity, r.status)
				require.Contains(t, r.body, tc.reason)
				r = b.v2("POST", "/subscribers?"+q, tc.refused)
				require.Equal(t, http.StatusUnprocessableEntity, r.status)
			}
		})
	}
}
