package sink

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSubscriberAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []Subscriber{
		{Email: "a@example.com"},
		{Email: "ø@example.no", Firstname: "Åse \"Q\" \\ \n\t\x01", Lastname: "Bø\u2028x", Fields: []Field{{"EXTRA3", "b"}, {"EXTRA1", "a"}, {ConsentEmail, "1"}}, Tags: []string{"vip", "x\"y"}},
		{Email: "bad\xffutf8@example.com", Fields: []Field{{"EXTRA2", "z"}}},
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
		for _, f := range s.Fields {
			add(f.Name, f.Value)
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

// Equal payloads encode to the same bytes however their fields were put together: the
// encoding is also the input of delta fingerprints.
func TestSubscriberAppendJSONDeterministic(t *testing.T) {
	t.Parallel()
	want := `{"email":"a@b.no","EXTRA1":"1","EXTRA2":"2","EXTRA4":"4","SAMTYKKESMS":"1"}`
	byHand := Subscriber{Email: "a@b.no", Fields: []Field{{"EXTRA4", "4"}, {ConsentSMS, "1"}, {"EXTRA1", "1"}, {"EXTRA3", ""}, {"EXTRA2", "2"}}}
	if got := string(byHand.AppendJSON(nil)); got != want {
		t.Errorf("out of order: AppendJSON = %s, want %s", got, want)
	}
	if byHand.Fields[0].Name != "EXTRA4" {
		t.Errorf("AppendJSON reordered the caller's Fields: %v", byHand.Fields)
	}
	var set Subscriber
	set.Email = "a@b.no"
	for _, f := range []Field{{ConsentSMS, "1"}, {"EXTRA2", "x"}, {"EXTRA4", "4"}, {"EXTRA1", "1"}, {"EXTRA2", "2"}} {
		set.SetField(f.Name, f.Value)
	}
	if got := string(set.AppendJSON(nil)); got != want {
		t.Errorf("SetField: AppendJSON = %s, want %s", got, want)
	}
	if len(set.Fields) != 4 || set.Field("EXTRA2") != "2" || set.Field("EXTRA3") != "" {
		t.Errorf("SetField: Fields = %v, want each name once and the last value", set.Fields)
	}
	if got := set.SortedFields(); &got[0] != &set.Fields[0] {
		t.Error("SortedFields copied fields that were already in order")
	}
}

// appendString checks eight bytes at a time, the last bytes of a string as the word that ends
// it, and goes on word by word after a two-byte rune; every character that needs escaping
// must be caught wherever it stands, in strings of every length, after a two-byte rune or
// not, and the result must be what encoding/json writes.
func TestAppendStringEscapesAtEveryPosition(t *testing.T) {
	t.Parallel()
	specials := []string{"\"", "\\", "\n", "\r", "\t", "\x00", "\x01", "\x1f", "\x7f", " ", "~", "ø", "Å", "\u2028", "\u2029", "€", "😀", "\xff", "\xc3", "\xe2\x80", "\xc3\x28", "<&>"}
	for _, sp := range specials {
		for n := 0; n <= 20; n++ { // plain bytes around the special one
			for pos := 0; pos <= n; pos++ {
				// After it, "b" or the space: the lowest plain byte, which a byte below it
				// would borrow from in a word-wise check.
				for _, after := range []string{"b", " "} {
					s := strings.Repeat("a", pos) + sp + strings.Repeat(after, n-pos)
					checkAppendString(t, s)
					for r := 0; r <= n; r++ { // and a two-byte rune before or after it
						checkAppendString(t, s[:r]+"ø"+s[r:])
					}
				}
			}
		}
	}
}

// FuzzAppendString checks appendString against encoding/json on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "ola.nordmann@example.no", "Bjørn Ærø", "a\"b\\c\nd", "\xc3\x28abcdefgh", "abcdefgø\x01"} {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}

func checkAppendString(t *testing.T, s string) {
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := string(appendString(nil, s)); got != strings.TrimSuffix(want.String(), "\n") {
		t.Fatalf("appendString(%q) = %s, want %s", s, got, want.String())
	}
	// After other bytes, into a buffer with room to spare (written straight into it) or
	// without.
	for _, dst := range [][]byte{[]byte(`{"a":`), make([]byte, 5, 64)} {
		copy(dst, `{"a":`)
		if got := string(appendString(dst, s)); got != `{"a":`+strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("appendString(%q, %q) = %s, want %s", `{"a":`, s, got[5:], want.String())
		}
	}
}
