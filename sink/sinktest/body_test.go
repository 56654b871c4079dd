package sinktest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func serve(t *testing.T, e *Emulator, method, path, body string) string {
	t.Helper()
	req := httptest.NewRequest(method, V2Prefix+path, strings.NewReader(body))
	req.SetBasicAuth(DefaultUser, DefaultKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, "%s %s: %s", method, path, w.Body)
	return w.Body.String()
}

// TestStoredValuesSurviveBodyReuse reads a create into the buffer a bulkinsert was read into,
// then overwrites the pooled buffers: what the emulator holds and answers must not change, as
// it would if a stored string pointed into a request's buffer.
func TestStoredValuesSurviveBodyReuse(t *testing.T) {
	// One P and no collection: the buffers the requests put back are the ones drained below.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	e := New()
	list := e.CreateList("L")
	e.CreateCustomField("Colours", "multiple_choice", "red", "blue")
	serve(t, e, "POST", "/subscribers/bulkinsert?subscriber_list_id=1&status=active&tag=merge",
		`[{"email":" Ann.Lee@Example.com ","firstname":"Ann","phone":"+4712345678","EXTRA1":"red","tags":["vip","new"]},`+
			`{"email":"bo@example.com","city":"Oslo","EXTRA1":"blue, red"}]`)
	serve(t, e, "POST", "/subscribers?subscriber_list_id=1", `{"email":"Cy@example.com","lastname":"Cyan","tags":["one"]}`)

	var drained []*scratch
	held := 0
	for {
		sc := getScratch()
		if cap(sc.body) == 0 {
			break
		}
		all := sc.body[:cap(sc.body)]
		if bytes.Contains(all, []byte(`"email":"Cy@example.com","lastname":"Cyan"`)) {
			held++
		}
		for i := range all {
			all[i] = 'X'
		}
		drained = append(drained, sc)
	}
	require.Equal(t, 1, held, "the bodies were not in a pooled buffer: this test would prove nothing")
	for _, sc := range drained {
		putScratch(sc)
	}

	want := []Stored{
		{ID: 1, Email: "Ann.Lee@Example.com", Fields: map[string]string{"firstname": "Ann", "phone": "+4712345678", "EXTRA1": "red"},
			Tags: []string{"vip", "new"}},
		{ID: 2, Email: "bo@example.com", Fields: map[string]string{"city": "Oslo", "EXTRA1": "blue,red"}},
		{ID: 3, Email: "Cy@example.com", Fields: map[string]string{"lastname": "Cyan"}, Tags: []string{"one"}},
	}
	got := e.Subscribers()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].ID, got[i].ID)
		require.Equal(t, want[i].Email, got[i].Email)
		require.Equal(t, want[i].Fields, got[i].Fields)
		require.Equal(t, want[i].Tags, got[i].Tags)
		require.Equal(t, "active", got[i].Lists[list].Status)
	}
	s, ok := e.SubscriberByEmail("ANN.LEE@example.com")
	require.True(t, ok)
	require.Equal(t, int64(1), s.ID)
	feed := serve(t, e, "GET", "/subscriberstatus", "")
	require.Contains(t, feed, `"email":"Ann.Lee@Example.com","phone":"+4712345678"`)
	require.NotContains(t, feed, "XX")
	show := serve(t, e, "POST", "/subscribers/by_email", `{"email":"cy@example.com"}`)
	require.Contains(t, show, `"email":"Cy@example.com"`)
	require.Contains(t, show, `"lastname":"Cyan"`)
}
