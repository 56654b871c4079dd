package sinktest

// Switch is one alternative behaviour of the real service the evidence allows, as the
// Emulator's options (and the subsim flag) give it.
type Switch struct {
	// Name is the subsim flag that turns it on.
	Name string
	// Options make an Emulator behave so.
	Options []Option
	// ListIDArray is true when a client must name lists as subscriber_list_id[] against it
	// (sink.Config.ListIDArray).
	ListIDArray bool
}

// SwitchGenders are the gender values the "gender-values" switch takes (subsim
// --gender-values's default).
var SwitchGenders = []string{"male", "female"}

// Switches are every alternative the Emulator can take, and the default first (Name ""):
// the matrix a client's tests run against.
func Switches() []Switch {
	return []Switch{
		{Name: ""},
		{Name: "status-wrapped", Options: []Option{WithStatusWrapped(true)}},
		{Name: "status-paged", Options: []Option{WithStatusPaged(2)}},
		{Name: "status-link-paged", Options: []Option{WithStatusLinkPaged(2)}},
		{Name: "status-days", Options: []Option{WithStatusDays(true)}},
		{Name: "status-from-query", Options: []Option{WithStatusFromQuery(true)}},
		{Name: "list-id-array-only", Options: []Option{WithListIDArrayOnly(true)}, ListIDArray: true},
		{Name: "put-only", Options: []Option{WithPutOnly(true)}},
		{Name: "row-messages", Options: []Option{WithRowMessages(true)}},
		{Name: "active-revives", Options: []Option{WithActiveRevives(true)}},
		{Name: "plain-401", Options: []Option{WithPlainText401(true)}},
		{Name: "omission-revives", Options: []Option{WithOmissionRevives(true)}},
		{Name: "by-list-ignores-status", Options: []Option{WithByListIgnoresStatus(true)}},
		{Name: "consent-booleans", Options: []Option{WithConsentBooleans(true)}},
		{Name: "gender-values", Options: []Option{WithGenderValues(SwitchGenders...)}},
		{Name: "multiple-choice-arrays", Options: []Option{WithMultipleChoiceArrays(true)}},
	}
}
