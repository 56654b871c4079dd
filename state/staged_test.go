package state_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/state"
)

// contactsCSV is n lines of a contacts export, compressible as a real one is.
func contactsCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString("E-post,Fornavn,Etternavn,Adresse,Postnummer,Poststed,Mobil\n")
	for i := range n {
		fmt.Fprintf(&b, "kontakt%d@example.com,Kari,Nordmann,Storgata %d,%04d,Bergen,9%07d\n", i, i%200+1, i%9000+1000, i)
	}
	return b.Bytes()
}

// restore restores a staged file into a temporary file and returns its content.
func restore(t *testing.T, s *state.Store, id int64) []byte {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "restored-*.csv")
	require.NoError(t, err)
	n, err := s.RestoreStaged(context.Background(), id, f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, int64(len(got)), n)
	return got
}

func TestStageInBlocks(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		content := contactsCSV(60_000) // 3.x blocks
		require.Greater(t, len(content), 3*state.StagedChunkSize)
		f, err := s.StageFile(ctx, "contacts.csv", bytes.NewReader(content))
		require.NoError(t, err)
		require.Equal(t, int64(len(content)), f.Size)
		require.Equal(t, state.StagedChunkSize, f.BlockSize)
		require.Equal(t, "zstd", f.Codec)
		require.Equal(t, (len(content)+state.StagedChunkSize-1)/state.StagedChunkSize, f.Chunks)

		// Each chunk is a zstd frame of its own holding its block of the file.
		dec, err := zstd.NewReader(nil)
		require.NoError(t, err)
		defer dec.Close()
		rows, err := s.DB().QueryContext(ctx, "SELECT seq, data FROM subsync_staged_chunk WHERE file_id = $1 ORDER BY seq", f.ID)
		require.NoError(t, err)
		var stored int
		for rows.Next() {
			var seq int
			var data []byte
			require.NoError(t, rows.Scan(&seq, &data))
			plain, err := dec.DecodeAll(data, nil)
			require.NoError(t, err)
			from := seq * state.StagedChunkSize
			require.Equal(t, content[from:min(from+state.StagedChunkSize, len(content))], plain, "chunk %d", seq)
			stored += len(data)
		}
		require.NoError(t, rows.Err())
		require.Less(t, stored, len(content)/3, "compressed")

		require.Equal(t, content, restore(t, s, f.ID))
		rc, err := s.OpenStaged(ctx, f.ID)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.Equal(t, content, got)

		empty, err := s.StageFile(ctx, "empty.csv", bytes.NewReader(nil))
		require.NoError(t, err)
		require.Zero(t, empty.Chunks)
		require.Empty(t, restore(t, s, empty.ID))
	})
}

// TestStagedChunksNotCompressedAgain: on Postgres a staged chunk, a zstd frame, is stored
// out of line as it is: Postgres does not try to compress it again (pglz's attempt on every
// chunk cost its backend about 0.8 s of CPU for a 750 MB file). SQLite compresses nothing.
func TestStagedChunksNotCompressedAgain(t *testing.T) {
	t.Parallel()
	s := newPostgres(t)
	var storage string
	require.NoError(t, s.DB().QueryRowContext(context.Background(), `SELECT attstorage FROM pg_attribute
WHERE attrelid = 'subsync_staged_chunk'::regclass AND attname = 'data'`).Scan(&storage))
	require.Equal(t, "e", storage, "EXTERNAL: out of line, uncompressed")
}

// TestRestoreStagedOfEarlierRelease reads a file staged the way releases before migration 70
// did (one gzip stream cut into chunks): a file queued before an upgrade is still worked.
func TestRestoreStagedOfEarlierRelease(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		content := contactsCSV(200_000)
		id := stageAsEarlierRelease(t, s, content)
		info, err := s.StagedFileInfo(context.Background(), id)
		require.NoError(t, err)
		require.Zero(t, info.BlockSize)
		require.Equal(t, "gzip", info.Codec)
		require.Equal(t, content, restore(t, s, id))
	})
}

// stageAsEarlierRelease stages content as releases before migration 70 did and returns its id.
func stageAsEarlierRelease(t *testing.T, s *state.Store, content []byte) int64 {
	t.Helper()
	ctx := context.Background()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	_, err := zw.Write(content)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	var id int64
	chunks := (z.Len() + state.StagedChunkSize - 1) / state.StagedChunkSize
	require.NoError(t, s.DB().QueryRowContext(ctx, `INSERT INTO subsync_staged_file (name, size, chunks, created_at)
VALUES ('old.csv', $1, $2, 0) RETURNING id`, len(content), chunks).Scan(&id))
	for seq := 0; z.Len() > 0; seq++ {
		_, err := s.DB().ExecContext(ctx, "INSERT INTO subsync_staged_chunk (file_id, seq, data) VALUES ($1, $2, $3)",
			id, seq, z.Next(state.StagedChunkSize))
		require.NoError(t, err)
	}
	return id
}

// TestEraseStagedFiles: an erasure deletes the staged files that hold the address, staged in
// blocks or by an earlier release, and keeps the others.
func TestEraseStagedFiles(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		content := contactsCSV(40_000)
		gone := "KONTAKT39999@example.com" // in the last block
		blocks, err := s.StageFile(ctx, "contacts.csv", bytes.NewReader(content))
		require.NoError(t, err)
		old := stageAsEarlierRelease(t, s, content)
		kept, err := s.StageFile(ctx, "other.csv", bytes.NewReader(contactsCSV(1000)))
		require.NoError(t, err)

		erased, err := s.Erase(ctx, gone)
		require.NoError(t, err)
		require.Equal(t, int64(2), erased["subsync_staged_file"])
		for _, id := range []int64{blocks.ID, old} {
			_, err := s.StagedFileInfo(ctx, id)
			require.ErrorIs(t, err, state.ErrNotFound)
		}
		_, err = s.StagedFileInfo(ctx, kept.ID)
		require.NoError(t, err, "a staged file without the address stays")
	})
}

// failingReader gives n bytes of a file, then fails.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("disk on fire")
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

func TestStageFileFailsWhole(t *testing.T) {
	t.Parallel()

	eachDB(t, func(t *testing.T, s *state.Store) {
		ctx := context.Background()
		_, err := s.StageFile(ctx, "broken.csv", &failingReader{n: 5*state.StagedChunkSize + 7})
		require.ErrorContains(t, err, "disk on fire")
		require.ErrorContains(t, err, "broken.csv")
		for _, table := range []string{"subsync_staged_file", "subsync_staged_chunk"} {
			var n int
			require.NoError(t, s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n))
			require.Zero(t, n, "nothing of a failed staging stays in %s", table)
		}
	})
}

// BenchmarkStageFile stages a generated contacts export of 1,350,000 lines (100 MB, the
// shape of e2ebench's CSV) from a file, as EnqueueImport does, into the database and
// restores it into a file, on SQLite and Postgres: MB/s of the file.
//
//	go test -run '^$' -bench BenchmarkStageFile -benchtime 5x ./state/
func BenchmarkStageFile(b *testing.B) {
	content := contactsCSV(1_350_000)
	path := filepath.Join(b.TempDir(), "contacts.csv")
	require.NoError(b, os.WriteFile(path, content, 0o600))
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run("db="+d+"/op=stage", func(b *testing.B) {
			s := benchStore(b, d)
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				in, err := os.Open(path)
				require.NoError(b, err)
				f, err := s.StageFile(context.Background(), "contacts.csv", in)
				require.NoError(b, err)
				require.NoError(b, in.Close())
				b.StopTimer()
				require.NoError(b, s.DeleteStaged(context.Background(), f.ID))
				b.StartTimer()
			}
		})
		b.Run("db="+d+"/op=restore", func(b *testing.B) {
			s := benchStore(b, d)
			f, err := s.StageFile(context.Background(), "contacts.csv", bytes.NewReader(content))
			require.NoError(b, err)
			out := filepath.Join(b.TempDir(), "restored.csv")
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				w, err := os.Create(out)
				require.NoError(b, err)
				_, err = s.RestoreStaged(context.Background(), f.ID, w)
				require.NoError(b, err)
				require.NoError(b, w.Close())
			}
		})
	}
}

func benchStore(b *testing.B, d string) *state.Store {
	ctx := context.Background()
	if d == "sqlite" {
		db, err := state.OpenSQLite(ctx, filepath.Join(b.TempDir(), "subsync.db"))
		require.NoError(b, err)
		b.Cleanup(func() { _ = db.Close() })
		_, err = state.Migrate(ctx, db, state.SQLite)
		require.NoError(b, err)
		return state.New(db, state.SQLite)
	}
	u, _ := testdb.PostgresSchema(b)
	db, err := sql.Open("pgx", u)
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	_, err = state.Migrate(ctx, db, state.Postgres)
	require.NoError(b, err)
	return state.New(db, state.Postgres)
}
