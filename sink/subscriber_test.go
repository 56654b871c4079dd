package sink

import (
	"encoding/json"
	"testing"
)

func TestSubscriberAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []Subscriber{
		{Email: "a@example.com"},
		{Email: "ø@example.no", Firstname: "Åse \"Q\" \\ \n\t\x01", Lastname: "Bø\u2028x", Fields: map[string]string{"EXTRA3": "b", "EXTRA1": "a", ConsentEmail: "1"}, Tags: []string{"vip", "x\"y"}},
		{Email: "bad\xffutf8@example.com", Fields: map[string]string{"EXTRA2": "z"}},
	}
	for _, s := range cases {
		got := s.AppendJSON(nil)
		var decoded map[string]any
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("AppendJSON(%+v) = %s: not valid JSON: %v", s, got, err)
		}
		want := map[string]any{}
		add := func(k, v string) {
			if v != "" {
				want[k] = v
			}
		}
		add("email", s.Email)
		add("firstname", s.Firstname)
		add("lastname", s.Lastname)
		for k, v := range s.Fields {
			add(k, v)
		}
		if len(s.Tags) > 0 {
			tags := make([]any, len(s.Tags))
			for i, tg := range s.Tags {
				tags[i] = tg
			}
			want["tags"] = tags
		}
		// encoding/json replaces invalid UTF-8 with U+FFFD, as AppendJSON must.
		wantRaw, _ := json.Marshal(want)
		var wantDecoded map[string]any
		if err := json.Unmarshal(wantRaw, &wantDecoded); err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(wantDecoded)
		gotJSON, _ := json.Marshal(decoded)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("AppendJSON round trip\n got %s\nwant %s", gotJSON, wantJSON)
		}
	}
}

func TestSubscriberAppendJSONDeterministic(t *testing.T) {
	t.Parallel()
	s := Subscriber{Email: "a@b.no", Fields: map[string]string{"EXTRA1": "1", "EXTRA2": "2", "EXTRA3": "3", "EXTRA4": "4", ConsentSMS: "1"}}
	first := string(s.AppendJSON(nil))
	for range 50 {
		if got := string(s.AppendJSON(nil)); got != first {
			t.Fatalf("AppendJSON not deterministic: got %s, want %s", got, first)
		}
	}
}
