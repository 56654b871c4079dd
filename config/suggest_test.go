package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
)

func TestUnknownKeySuggestsWithLine(t *testing.T) {
	t.Parallel()
	path := write(t, "[api]\nbase_url = \"http://127.0.0.1:1/x\"\ntimout = \"3s\"\n\n[[syncs]]\nname = \"a\"\nlist = 1\nshedule = \"@daily\"\n[syncs.source]\npath = \"a.csv\"\n")
	_, err := config.Load(path, creds)
	require.ErrorContains(t, err, path+":3: api.timout: unknown key (did you mean timeout?)")
	require.ErrorContains(t, err, path+":8: syncs[0].shedule: unknown key (did you mean schedule?)")
}
