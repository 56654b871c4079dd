package sinktest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink/sinktest"
)

func TestBulkInsertRefusesWholeBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list := b.createList("Members")
	_, num := b.srv.CreateCustomField("Score", "number")
	_, date := b.srv.CreateCustomField("Joined", "date")
	_, single := b.srv.CreateCustomField("Size", "single_choice", "S", "M")
	_, multi := b.srv.CreateCustomField("Topics", "multiple_choice", "news", "offers")
	_, drop := b.srv.CreateCustomField("Region", "dropdown", "north", "south")
	lq := fmt.Sprintf("subscriber_list_id=%d", list.ID)

	rows1001 := make([]string, 1001)
	for i := range rows1001 {
		rows1001[i] = fmt.Sprintf(`{"email":"r%d@example.com"}`, i)
	}

	tests := []struct {
		name  string
		query string
		body  string // %s is replaced by a good row that must not be applied
		rows  int
		want  string
	}{
		{"more than 1000 rows", lq, "[%s," + strings.Join(rows1001[1:], ",") + "]", 1001, "row 1000: more than 1000 rows"},
		{"body is an object", lq, `{"rows":[%s]}`, 0, "row 0: body must be a JSON array"},
		{"body is empty", lq, ``, 0, "row 0: body must be a JSON array"},
		{"body is malformed", lq, `[%s,{"email":"x@example.com"`, 2, "row 1: malformed JSON"},
		{"row is not an object", lq, `[%s,"x@example.com"]`, 2, "row 1: not a JSON object"},
		{"row without email", lq, `[%s,{"firstname":"Ann"}]`, 2, "row 1: missing email"},
		{"row with invalid email", lq, `[%s,{"email":"x"}]`, 2, `row 1: invalid email "x"`},
		{"row with email without domain dot", lq, `[%s,{"email":"ann@localhost"}]`, 2, `row 1: invalid email "ann@localhost"`},
		{"row with email with a space", lq, `[%s,{"email":"ann smith@example.com"}]`, 2, `row 1: invalid email`},
		{"row with email as number", lq, `[%s,{"email":42}]`, 2, `row 1: invalid email 42`},
		{"unknown EXTRA slot", lq, `[%s,{"email":"b@example.com","EXTRA99":"x"}]`, 2, "row 1: unknown custom field EXTRA99"},
		{"unknown field", lq, `[%s,{"email":"b@example.com","mobile":"123"}]`, 2, `row 1: unknown field "mobile"`},
		{"birthday in wrong format", lq, `[%s,{"email":"b@example.com","birthday":"31.12.1990"}]`, 2, `row 1: invalid birthday "31.12.1990"`},
		{"birthday impossible", lq, `[%s,{"email":"b@example.com","birthday":"1990-02-30"}]`, 2, `row 1: invalid birthday "1990-02-30"`},
		{"field as object", lq, `[%s,{"email":"b@example.com","city":{"name":"Oslo"}}]`, 2, `row 1: city must be a string`},
		{"number field not a number", lq, `[%s,{"email":"b@example.com","` + num + `":"12a"}]`, 2, `row 1: ` + num + ` (number field "Score"): "12a" is not a number`},
		{"number field NaN", lq, `[%s,{"email":"b@example.com","` + num + `":"NaN"}]`, 2, `is not a number`},
		{"date field not a date", lq, `[%s,{"email":"b@example.com","` + date + `":"2024-13-01"}]`, 2, `row 1: ` + date + ` (date field "Joined"): "2024-13-01" is not a date`},
		{"single choice not a choice", lq, `[%s,{"email":"b@example.com","` + single + `":"XL"}]`, 2, `"XL" is not one of the choices`},
		{"multiple choice not a choice", lq, `[%s,{"email":"b@example.com","` + multi + `":"news,sports"}]`, 2, `"sports" is not one of the choices`},
		{"dropdown not a choice", lq, `[%s,{"email":"b@example.com","` + drop + `":"east"}]`, 2, `"east" is not one of the choices`},
		{"tags not an array", lq, `[%s,{"email":"b@example.com","tags":"vip"}]`, 2, `row 1: tags must be an array of strings`},
		{"unknown status", lq + "&status=deleted", `[%s]`, 1, `row 0: unknown status "deleted"`},
		{"unknown status_mobile", lq + "&status_mobile=gone", `[%s]`, 1, `row 0: unknown status_mobile "gone"`},
		{"unknown tag", lq + "&tag=append", `[%s]`, 1, `row 0: unknown tag "append"`},
		{"unknown list", "subscriber_list_id=999", `[%s]`, 1, `row 0: unknown list 999`},
		{"one unknown list of two", lq + "&subscriber_list_id[]=998", `[%s]`, 1, `row 0: unknown list 998`},
		{"no list", "", `[%s]`, 1, `row 0: subscriber_list_id is required`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := b.with(t)
			good := fmt.Sprintf("good%d@example.com", i)
			body := tt.body
			if strings.Contains(body, "%s") {
				body = strings.Replace(body, "%s", `{"email":"`+good+`","firstname":"Good"}`, 1)
			}
			r := b.bulk(tt.query, body)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "body %s", r.body)
			got := decode[map[string]string](t, r)
			require.Equal(t, "422 Unprocessable entity", got["status"])
			require.Contains(t, got["message"], tt.want)
			_, applied := b.srv.SubscriberByEmail(good)
			require.False(t, applied, "a row of a refused batch was applied")
			_, applied = b.srv.SubscriberByEmail("b@example.com")
			require.False(t, applied, "a row of a refused batch was applied")
			want, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			var seen bool
			for _, req := range b.srv.Requests() {
				if req.Path == "/api/public/v2/subscribers/bulkinsert" && req.Query.Encode() == want.Encode() &&
					req.Status == http.StatusUnprocessableEntity && req.Rows == tt.rows {
					seen = true
				}
			}
			require.True(t, seen, "no 422 bulkinsert with %d rows recorded: %+v", tt.rows, b.srv.Requests())
		})
	}
	t.Run("valid values of every kind are accepted", func(t *testing.T) {
		t.Parallel()
		b := b.with(t)
		r := b.bulk(lq, `[{"email":"  All.Kinds@Example.com ","firstname":"Ann","lastname":"Lee","address":"Road 1",`+
			`"zip":"0150","city":"Oslo","phone":"+4799999999","company":"ACME","birthday":"1990-02-28","gender":"female",`+
			`"SAMTYKKEEPOST":"1","`+num+`":"-12.5","`+date+`":"2024-02-29","`+single+`":"M",`+
			`"`+multi+`":["news","offers"],"`+drop+`":"south","tags":["vip"],"lastname":"Lee"}]`)
		require.Equal(t, http.StatusOK, r.status, "body %s", r.body)
		require.JSONEq(t, `{"status":"200 Success"}`, r.body)
		s, ok := b.srv.SubscriberByEmail("all.kinds@example.com")
		require.True(t, ok)
		require.Equal(t, "All.Kinds@Example.com", s.Email)
		require.Equal(t, map[string]string{
			"firstname": "Ann", "lastname": "Lee", "address": "Road 1", "zip": "0150", "city": "Oslo",
			"phone": "+4799999999", "company": "ACME", "birthday": "1990-02-28", "gender": "female",
			"SAMTYKKEEPOST": "1", num: "-12.5", date: "2024-02-29", single: "M", multi: "news,offers", drop: "south",
		}, s.Fields)
		require.Equal(t, []string{"vip"}, s.Tags)
	})
}

func TestSingleCreateValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	list := b.createList("L")
	for _, tt := range []struct {
		name, query, body, want string
	}{
		{"invalid email", "subscriber_list_id=" + itoa(list.ID), `{"email":"nope"}`, `invalid email "nope"`},
		{"unknown status", "subscriber_list_id=" + itoa(list.ID), `{"email":"a@example.com","status":"reactivate"}`, `unknown status "reactivate"`},
		{"unknown list", "subscriber_list_id=77", `{"email":"a@example.com"}`, `unknown list 77`},
		{"body is an array", "subscriber_list_id=" + itoa(list.ID), `[{"email":"a@example.com"}]`, `body must be a JSON object`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := b.with(t).v2("POST", "/subscribers?"+tt.query, tt.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "body %s", r.body)
			got := decode[map[string]string](t, r)
			require.Equal(t, "422 Unprocessable entity", got["status"])
			require.Contains(t, got["message"], tt.want)
		})
	}
	_, ok := b.srv.SubscriberByEmail("a@example.com")
	require.False(t, ok)
}

func TestUnknownIDsAre404(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct{ method, path, body string }{
		{"GET", "/subscriberlists/41", ""},
		{"PATCH", "/subscriberlists/41", `{"title":"x"}`},
		{"DELETE", "/subscriberlists/41", ""},
		{"GET", "/subscribers/41", ""},
		{"DELETE", "/subscribers/41", ""},
		{"POST", "/subscribers/41/unsubscribe", ""},
		{"GET", "/custom_fields/41", ""},
		{"PATCH", "/custom_fields/41", `{"label":"x"}`},
		{"DELETE", "/custom_fields/41", ""},
		{"GET", "/subscribers/by_list?list_id=41", ""},
		{"GET", "/no_such_thing", ""},
	} {
		r := b.v2(tt.method, tt.path, tt.body)
		require.Equal(t, http.StatusNotFound, r.status, "%s %s", tt.method, tt.path)
		require.JSONEq(t, `{"status":"404 Not found"}`, r.body)
	}
	for _, tt := range []struct{ method, path string }{
		{"GET", "/subscribers/41"}, {"DELETE", "/subscribers/41"}, {"DELETE", "/subscriberlists/41"},
	} {
		r := b.v3(tt.method, tt.path)
		require.Equal(t, http.StatusNotFound, r.status, "v3 %s %s", tt.method, tt.path)
		require.JSONEq(t, `{"status":"404 Not found"}`, r.body)
	}
}

func TestBodyNeedsJSONContentType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, err := http.NewRequest("POST", b.srv.URL+"/subscriberlists", strings.NewReader(`{"title":"x"}`))
	require.NoError(t, err)
	req.SetBasicAuth(b.srv.User, b.srv.Key)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := b.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}

// TestDefault422IsTheSpecsBody: without WithRowMessages a 422 is exactly the spec's body.
func TestDefault422IsTheSpecsBody(t *testing.T) {
	t.Parallel()
	b := setup(t, sinktest.WithRowMessages(false))
	list := b.createList("L")
	for _, body := range []string{`[{"email":"nope"}]`, `{"email":"a@example.com"}`, `[{"email":"a@example.com","EXTRA9":"x"}]`} {
		r := b.bulk("subscriber_list_id="+itoa(list.ID), body)
		require.Equal(t, 422, r.status)
		require.Equal(t, sinktest.Seed422, r.body)
		require.Equal(t, `{"status":"422 Unprocessable entity"}`, r.body)
	}
}
