package mapping

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCreateMissingIsBounded: a mapping asking for more new custom fields than one run may
// create, or for a label longer than a person would read, creates none and says why.
func TestCreateMissingIsBounded(t *testing.T) {
	t.Parallel()
	srv, client := newService(t)

	var b strings.Builder
	b.WriteString("create_missing = true\n[columns]\n\"E-post\" = \"email\"\n")
	for i := range MaxCreatedFields + 1 {
		fmt.Fprintf(&b, "\"K%d\" = \"custom:Felt %d\"\n", i, i)
	}
	spec, err := ParseSpec([]byte(b.String()))
	require.NoError(t, err)
	_, err = Resolve(t.Context(), client, spec)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.ErrorContains(t, err, fmt.Sprintf("create_missing: the service lacks %d of the custom fields the mapping names: create_missing creates at most %d", MaxCreatedFields+1, MaxCreatedFields))
	require.Zero(t, fieldRequests(srv)["POST"], "no field created")

	long := strings.Repeat("å", MaxCreatedLabel+1)
	spec, err = ParseSpec([]byte("create_missing = true\n[columns]\n\"E-post\" = \"email\"\n\"Lang\" = \"custom:" + long + "\"\n"))
	require.NoError(t, err)
	_, err = Resolve(t.Context(), client, spec)
	require.ErrorAs(t, err, &se)
	require.ErrorContains(t, err, fmt.Sprintf("columns.Lang: custom field label is %d characters: create_missing creates labels of at most %d", MaxCreatedLabel+1, MaxCreatedLabel))
	require.Zero(t, fieldRequests(srv)["POST"], "no field created")

	// Exactly the bound is created.
	b.Reset()
	b.WriteString("create_missing = true\n[columns]\n\"E-post\" = \"email\"\n")
	for i := range MaxCreatedFields {
		fmt.Fprintf(&b, "\"K%d\" = \"custom:Felt %d\"\n", i, i)
	}
	spec, err = ParseSpec([]byte(b.String()))
	require.NoError(t, err)
	fields, err := Resolve(t.Context(), client, spec)
	require.NoError(t, err)
	require.Len(t, fields.Created(), MaxCreatedFields)
}
