package jobs_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/state"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()

	oslo, err := time.LoadLocation("Europe/Oslo")
	require.NoError(t, err)
	tests := []struct {
		name, spec, tz string
		after, want    time.Time
		wantErr        string
	}{
		{name: "nightly in Oslo, winter", spec: "0 2 * * *", tz: "Europe/Oslo",
			after: time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC), want: time.Date(2025, 1, 11, 2, 0, 0, 0, oslo)},
		{name: "nightly in Oslo, summer", spec: "0 2 * * *", tz: "Europe/Oslo",
			after: time.Date(2025, 7, 10, 12, 0, 0, 0, time.UTC), want: time.Date(2025, 7, 11, 2, 0, 0, 0, oslo)},
		{name: "descriptor with a zone", spec: "@daily", tz: "Europe/Oslo",
			after: time.Date(2025, 1, 10, 22, 30, 0, 0, time.UTC), want: time.Date(2025, 1, 11, 0, 0, 0, 0, oslo)},
		{name: "UTC by default", spec: "*/15 * * * *",
			after: time.Date(2025, 1, 10, 12, 7, 0, 0, time.UTC), want: time.Date(2025, 1, 10, 12, 15, 0, 0, time.UTC)},
		{name: "every", spec: "@every 90m",
			after: time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC), want: time.Date(2025, 1, 10, 13, 30, 0, 0, time.UTC)},
		{name: "unknown zone", spec: "0 2 * * *", tz: "Europe/Bergen", wantErr: `time zone "Europe/Bergen"`},
		{name: "bad spec", spec: "0 25 * * *", wantErr: `schedule "0 25 * * *"`},
		{name: "six fields", spec: "0 0 2 * * *", wantErr: "schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := jobs.ParseSchedule(tt.spec, tt.tz)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got := s.Next(tt.after)
			require.True(t, got.Equal(tt.want), "got %s, want %s", got, tt.want)
		})
	}
}

func TestMigrateAndConfig(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	dir := t.TempDir()
	cfg := jobs.Config{DataDir: dir}
	require.NoError(t, jobs.Migrate(ctx, cfg))
	require.NoError(t, jobs.Migrate(ctx, cfg), "migrating twice changes nothing")
	require.FileExists(t, filepath.Join(dir, jobs.SQLiteFile))

	// History and queue commands work without credentials; Run needs them.
	rt, err := jobs.Open(ctx, cfg)
	require.NoError(t, err)
	defer rt.Close()
	runs, err := rt.State().Runs(ctx, state.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, runs)
	require.ErrorContains(t, rt.Run(ctx), "subscriber service client")

	for _, bad := range []struct {
		cfg     jobs.Config
		wantErr string
	}{
		{jobs.Config{}, "DataDir"},
		{jobs.Config{DatabaseURL: "mysql://x"}, "postgres://"},
		{jobs.Config{DataDir: dir, Syncs: []jobs.SyncSpec{{Name: "a", ListID: 1, Schedule: "nope"}}}, "Syncs[0].Schedule"},
		{jobs.Config{DataDir: dir, Syncs: []jobs.SyncSpec{{Name: "a", ListID: 1, VerifyEvery: "weekly"}}}, "Syncs[0].VerifyEvery"},
		{jobs.Config{DataDir: dir, Syncs: []jobs.SyncSpec{{Name: "a", ListID: 1}, {Name: "a", ListID: 2}}}, `Syncs[1].Name: "a": already used by an earlier sync`},
		{jobs.Config{DataDir: dir, Syncs: []jobs.SyncSpec{{Name: "a"}}}, "Syncs[0].ListID"},
		{jobs.Config{DataDir: dir, Syncs: []jobs.SyncSpec{{Name: "a", ListID: 1, Suppression: "ignore"}}}, "Syncs[0].Suppression"},
	} {
		_, err := jobs.Open(ctx, bad.cfg)
		require.ErrorContains(t, err, bad.wantErr)
	}
}
