package mapping_test

import (
	"fmt"
	"strings"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
)

func ExampleMapper_Map() {
	spec, err := mapping.ParseSpec([]byte(`
[columns]
"E-post"     = "email"
"Navn"       = "firstname"
"Mobil"      = "phone"
"Nyhetsbrev" = "SAMTYKKEEPOST"
"Notat"      = "ignore"
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	header := []string{"E-post", "Navn", "Mobil", "Nyhetsbrev", "Notat", "Kundenr"}
	m, err := mapping.Compile(spec, header, mapping.Fields{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("not mapped:", m.Unplaced())

	row, rej := m.Map(sources.Record{Line: 2, Values: []string{" Kari.Nordmann@Example.NO", "Kari  ", "912 34 567", "nei", "ring henne", "17"}})
	fmt.Printf("%s status=%s\n", row.Sub.AppendJSON(nil), row.Status)

	_, rej = m.Map(sources.Record{Line: 3, Values: []string{"ola@example", "Ola", "", "", "", ""}})
	fmt.Println(rej.Code+":", rej.Error())
	// Output:
	// not mapped: [Kundenr]
	// {"email":"kari.nordmann@example.no","firstname":"Kari","phone":"+4791234567","SAMTYKKEEPOST":"0"} status=unsubscribed
	// invalid_email: line 3 column "E-post": invalid_email: the e-mail address has no dot in the domain "example"
}

func ExampleAuto() {
	header := []string{"Email Address", "First Name", "Last Name", "MEMBER_RATING", "TAGS"}
	spec, unplaced := mapping.Auto(header)
	for _, h := range header {
		if c, ok := spec.Columns[h]; ok {
			fmt.Printf("%s → %s\n", h, c.To)
		}
	}
	fmt.Println("unplaced:", strings.Join(unplaced, ", "))
	// Output:
	// Email Address → email
	// First Name → firstname
	// Last Name → lastname
	// TAGS → tags
	// unplaced: MEMBER_RATING
}
