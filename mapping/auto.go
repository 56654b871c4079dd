package mapping

import (
	"slices"
	"strings"
	"sync"

	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/sink"
)

// alias is a header name Auto recognises, folded (see fold), with the target it maps to.
// When several columns name one target, the lowest rank wins (a mobile number before a
// landline), then the leftmost column.
type alias struct {
	target string
	rank   int
}

// aliases are the header names of common exports: Norwegian (and the other Scandinavian
// languages), English, Google Contacts (both CSV formats), Mailchimp, Outlook, and the
// service's own field names.
var aliases = sync.OnceValue(func() map[string]alias {
	m := map[string]alias{}
	add := func(target string, rank int, names ...string) {
		for _, n := range names {
			m[fold(n)] = alias{target, rank}
		}
	}
	add(sink.FieldEmail, 0, "E-post", "Epost", "E-postadresse", "Epostadresse", "E-post adresse",
		"E-mail", "Email", "Email Address", "E-mail Address", "Emailadresse", "E-mailadresse",
		"Mailadresse", "E-mail 1 - Value", "Primary Email", "Email 1", "E-postadress", "Mejl", "Mejladress")
	add(sink.FieldEmail, 1, "E-post 1", "Epost1", "E-mail 1", "Email1", "Work Email", "Personal Email")
	// The second and third addresses of Outlook (English and Norwegian) and Google Contacts
	// exports: fallbacks of the first (see AutoSampled).
	add(sink.FieldEmail, 2, "E-mail 2 Address", "E-mail 2 - Value", "E-post 2-adresse", "E-post 2", "Email 2", "E-mail 2")
	add(sink.FieldEmail, 3, "E-mail 3 Address", "E-mail 3 - Value", "E-post 3-adresse", "E-post 3", "Email 3", "E-mail 3")
	add(sink.FieldFirstname, 0, "Fornavn", "First Name", "Firstname", "Given Name", "Förnamn", "Fname", "First")
	add(sink.FieldLastname, 0, "Etternavn", "Last Name", "Lastname", "Surname", "Family Name", "Efternavn",
		"Efternamn", "Lname", "Last")
	add(TargetFullName, 0, "Navn", "Fullt navn", "Name", "Full Name", "Fullname", "Namn", "Fullständigt namn")
	add(sink.FieldAddress, 0, "Adresse", "Address", "Gateadresse", "Street Address", "Street", "Postadresse",
		"Address 1 - Street", "Address Line 1", "Adress", "Gatuadress", "Home Street", "Business Street")
	add(sink.FieldAddress, 1, "Address 1 - Formatted")
	add(sink.FieldZip, 0, "Postnummer", "Postnr", "Post nr", "Zip", "Zip Code", "Zipcode", "Postal Code",
		"Postcode", "Post Code", "Address 1 - Postal Code", "Postnr.", "Home Postal Code", "Business Postal Code")
	add(sink.FieldCity, 0, "Poststed", "Sted", "City", "Town", "By", "Postort", "Ort", "Address 1 - City",
		"Home City", "Business City")
	add(sink.FieldPhone, 0, "Mobil", "Mobilnummer", "Mobiltelefon", "Mobile", "Mobile Phone", "Mobile Number",
		"Cell", "Cell Phone", "Cellphone", "Mobilnr", "Mobiltlf", "Mobiltelefonnummer")
	add(sink.FieldPhone, 1, "Telefon", "Telefonnummer", "Tlf", "Tlf.", "Phone", "Phone Number", "Phone 1 - Value",
		"Telephone", "Tel", "Telefonnr", "Primary Phone", "Home Phone", "Business Phone")
	add(sink.FieldCompany, 0, "Firma", "Bedrift", "Company", "Firmanavn", "Selskap", "Organisasjon",
		"Organization", "Organisation", "Organization Name", "Organization 1 - Name", "Company Name", "Företag")
	add(sink.FieldBirthday, 0, "Fødselsdato", "Fødselsdag", "Bursdag", "Birthday", "Birth Date", "Birthdate",
		"Date of Birth", "DOB", "Födelsedatum", "Fodselsdato")
	add(sink.FieldGender, 0, "Kjønn", "Gender", "Sex", "Kön", "Køn")
	add(TargetTags, 0, "Tags", "Tagger", "Etiketter")
	for _, c := range sink.ConsentFields {
		add(c, 0, c)
	}
	return m
})

// Auto maps a header with no hand-written mapping: it recognises common English and
// Norwegian column names (E-post, Epost, E-mail, Email, Email Address, E-mail 1 - Value;
// Fornavn, First Name, Given Name; Etternavn, Last Name, Family Name; Adresse; Postnummer,
// Postnr; Poststed, Sted; Mobil, Mobiltelefon, Telefon, Phone; Firma, Bedrift, Company;
// Fødselsdato, Birthday; Kjønn, Gender; the consent fields by their service names …),
// compared without regard to case, accents, spaces and punctuation.
//
// It returns the spec and, in header order, every column it could not place: those are
// reported, never silently dropped. Auto never maps a column to a status (a CRM's "Status"
// column rarely holds subscriber statuses) or to a custom field.
func Auto(header []string) (Spec, []string) {
	spec, unplaced, _ := AutoSampled(header, nil)
	return spec, unplaced
}

// Choice is a target that several columns could fill, and the column Auto chose.
type Choice struct {
	Target       string   `json:"target"`
	Column       string   `json:"column"`
	Alternatives []string `json:"alternatives"`
	Filled       int      `json:"filled"` // sampled rows with a value in Column
}

// Ambiguous reports whether several columns of header could fill one target: then
// [AutoSampled] decides by the data.
func Ambiguous(header []string) bool {
	seen := map[string]bool{}
	for _, h := range header {
		a, ok := aliases()[fold(h)]
		if !ok || a.target == TargetTags {
			continue
		}
		if seen[a.target] {
			return true
		}
		seen[a.target] = true
	}
	return false
}

// AutoSampled is [Auto] that looks at the data: when several columns could fill one target
// (business and home address columns of an Outlook export, several phone or e-mail
// columns), the column with a value in the most sampled rows wins, then the lowest rank,
// then the leftmost. sample holds rows aligned with header (nil: by names alone). It also
// returns each such choice with its alternatives, for preview.
func AutoSampled(header []string, sample [][]string) (Spec, []string, []Choice) {
	type pick struct {
		col, rank, filled int
	}
	filled := make([]int, len(header))
	for _, row := range sample {
		for i := range min(len(row), len(header)) {
			if strings.TrimSpace(row[i]) != "" {
				filled[i]++
			}
		}
	}
	best := map[string]pick{}
	alts := map[string][]int{}
	for i, h := range header {
		a, ok := aliases()[fold(h)]
		if !ok {
			continue
		}
		if a.target == TargetTags {
			continue // any number of tag columns
		}
		alts[a.target] = append(alts[a.target], i)
		p, ok := best[a.target]
		if !ok || filled[i] > p.filled || (filled[i] == p.filled && a.rank < p.rank) {
			best[a.target] = pick{i, a.rank, filled[i]}
		}
	}
	var choices []Choice
	for target, cols := range alts {
		if len(cols) < 2 {
			continue
		}
		c := Choice{Target: target, Column: header[best[target].col], Filled: best[target].filled}
		for _, i := range cols {
			if i != best[target].col {
				c.Alternatives = append(c.Alternatives, header[i])
			}
		}
		choices = append(choices, c)
	}
	slices.SortFunc(choices, func(a, b Choice) int { return strings.Compare(a.Target, b.Target) })
	spec := Spec{Columns: map[string]Column{}}
	var unplaced []string
	for i, h := range header {
		a, ok := aliases()[fold(h)]
		switch {
		case ok && a.target == TargetTags:
			spec.Columns[h] = Column{To: TargetTags}
		case ok && best[a.target].col == i:
			spec.Columns[h] = Column{To: a.target}
			if a.target == sink.FieldEmail {
				spec.Columns[h] = Column{To: a.target, Fallback: emailFallbacks(header, alts[a.target], i)}
			}
		case ok && a.target == sink.FieldEmail:
			// A fallback of the e-mail column chosen.
		case strings.HasPrefix(h, rejectfile.Prefix):
			// A column of a rejects export: ignored (see Compile), not reported.
		default:
			if !slices.Contains(unplaced, h) {
				unplaced = append(unplaced, h)
			}
		}
	}
	return spec, unplaced, choices
}

// emailFallbacks are the e-mail columns cols of header but the chosen one, by rank, then from
// the left: the other addresses of an export, tried in turn when the chosen column has no
// valid address. nil when there are none.
func emailFallbacks(header []string, cols []int, chosen int) []string {
	rest := slices.DeleteFunc(slices.Clone(cols), func(i int) bool { return i == chosen })
	slices.SortStableFunc(rest, func(x, y int) int { return aliases()[fold(header[x])].rank - aliases()[fold(header[y])].rank })
	var out []string
	for _, i := range rest {
		out = append(out, header[i])
	}
	return out
}

// WithAuto returns s with the header's columns it does not name mapped by Auto (the other
// settings kept), and the columns left unplaced (ignored columns excluded). A spec with no
// columns is mapped by Auto whole; a partial [columns] table keeps its own columns and gets
// the others from Auto, for targets it does not fill itself (see [Spec.WithAutoSampled]).
// With NoAuto (auto = false) the spec is returned as it is, with nil.
func (s Spec) WithAuto(header []string) (Spec, []string) {
	s, unplaced, _ := s.WithAutoSampled(header, nil)
	return s, unplaced
}

// WithAutoSampled is [Spec.WithAuto] deciding between candidate columns by sample (see
// [AutoSampled]); it also returns the choices made.
//
// With columns of its own, the spec's columns, their e-mail fallbacks, its ignore list and
// the columns of a rejects export are left to it; the rest of the header is mapped by
// AutoSampled, except to a target the spec already fills (by a column, a constant or a
// computed field: "Mail" = "email" leaves an "E-post" column unplaced, not a second e-mail).
func (s Spec) WithAutoSampled(header []string, sample [][]string) (Spec, []string, []Choice) {
	if s.NoAuto {
		return s, nil, nil
	}
	if len(s.Columns) == 0 {
		auto, unplaced, choices := AutoSampled(header, sample)
		s.Columns = auto.Columns
		unplaced = slices.DeleteFunc(unplaced, func(c string) bool { return slices.Contains(s.Ignore, c) })
		return s, unplaced, choices
	}
	rest := s.AutoColumns(header)
	if len(rest) == 0 {
		return s, nil, nil
	}
	sub := make([]string, len(rest))
	for k, i := range rest {
		sub[k] = header[i]
	}
	var subSample [][]string
	for _, row := range sample {
		r := make([]string, len(rest))
		for k, i := range rest {
			if i < len(row) {
				r[k] = row[i]
			}
		}
		subSample = append(subSample, r)
	}
	auto, unplaced, choices := AutoSampled(sub, subSample)
	taken := s.filledTargets()
	cols := make(map[string]Column, len(s.Columns)+len(auto.Columns))
	for col, c := range s.Columns {
		cols[col] = c
	}
	for _, h := range sub {
		c, ok := auto.Columns[h]
		switch {
		case !ok:
		case c.To != TargetTags && taken[targetString(c)]:
			unplaced = append(unplaced, h)
			for _, f := range c.Fallback {
				unplaced = append(unplaced, f)
			}
		default:
			cols[h] = c
		}
	}
	s.Columns = cols
	// In header order, once each.
	unplaced = slices.DeleteFunc(slices.Clone(sub), func(h string) bool {
		return !slices.Contains(unplaced, h)
	})
	return s, slices.Compact(unplaced), choices
}

// AutoColumns are the indexes of the header's columns that automatic mapping may place for
// s: none with NoAuto; with no columns, all; else those s does not name (as Compile finds
// them: exactly, or ignoring case), nor lists as an e-mail fallback or under ignore, and not
// a rejects export's.
func (s Spec) AutoColumns(header []string) []int {
	if s.NoAuto {
		return nil
	}
	named := make([]bool, len(header))
	mark := func(col string) {
		if i, msg := findColumn(header, col); msg == "" {
			named[i] = true
		}
	}
	for col, c := range s.Columns {
		mark(col)
		for _, f := range c.Fallback {
			mark(f)
		}
	}
	for _, col := range s.Ignore {
		mark(col)
	}
	var out []int
	for i, h := range header {
		if !named[i] && !strings.HasPrefix(h, rejectfile.Prefix) {
			out = append(out, i)
		}
	}
	return out
}

// filledTargets are the targets s fills itself, as targetString writes them: its columns'
// (but tags and ignore, of which there may be several), its constants' and its computed
// fields'.
func (s Spec) filledTargets() map[string]bool {
	taken := map[string]bool{}
	for _, c := range s.Columns {
		if c.To != TargetTags && c.To != TargetIgnore {
			taken[targetString(c)] = true
		}
	}
	for t := range s.Constants {
		taken[t] = true
	}
	for t := range s.Computed {
		taken[t] = true
	}
	return taken
}
