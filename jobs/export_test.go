package jobs

// GapCursor is gapCursor, for the tests of package jobs_test.
var GapCursor = gapCursor
