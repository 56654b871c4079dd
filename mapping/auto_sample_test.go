package mapping_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
)

// An Outlook export lists the business address before the home address; people exported
// from a personal address book have only the home one filled.
func TestAutoSampledOutlookHomeAddress(t *testing.T) {
	t.Parallel()
	header := []string{"First Name", "E-mail Address", "Business Street", "Business City", "Business Postal Code",
		"Home Street", "Home City", "Home Postal Code", "Business Phone", "Mobile Phone"}
	sample := [][]string{
		{"Ada", "ada@example.com", "", "", "", "Storgata 1", "Oslo", "0155", "", "+4791234567"},
		{"Bo", "bo@example.com", "", "", "", "Bryggen 2", "Bergen", "5003", "", ""},
	}
	require.True(t, mapping.Ambiguous(header))
	spec, _, choices := mapping.AutoSampled(header, sample)
	require.Equal(t, "address", spec.Columns["Home Street"].To)
	require.Equal(t, "city", spec.Columns["Home City"].To)
	require.Equal(t, "zip", spec.Columns["Home Postal Code"].To)
	require.NotContains(t, spec.Columns, "Business Street")
	require.Equal(t, "phone", spec.Columns["Mobile Phone"].To)
	require.Len(t, choices, 4) // address, city, phone, zip
	require.Equal(t, mapping.Choice{Target: "address", Column: "Home Street", Alternatives: []string{"Business Street"}, Filled: 2}, choices[0])

	// Without data, by names alone: the leftmost, as before.
	spec, _ = mapping.Auto(header)
	require.Equal(t, "address", spec.Columns["Business Street"].To)
}
