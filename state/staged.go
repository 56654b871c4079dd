package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/jackc/pgx/v5"
)

// StagedChunkSize is how many bytes of a staged file one stored chunk holds: each chunk is
// one such block of the file compressed on its own (a zstd frame), so that the blocks
// compress (and decompress) on every core at once.
const StagedChunkSize = 1 << 20

// StagedFile describes a file staged into the database.
type StagedFile struct {
	ID     int64
	Name   string // the original file name, for people
	Size   int64  // uncompressed bytes
	Chunks int
	// BlockSize is the bytes of the file each chunk holds (StagedChunkSize), each chunk
	// compressed on its own with Codec ("zstd"); 0 for a file staged by an earlier release:
	// one stream of Codec "gzip" cut into chunks.
	BlockSize int
	Codec     string
}

// StageFile copies r into the database in one transaction, a file staged completely or not
// at all: it reads r in blocks of StagedChunkSize, compresses them (zstd, fastest level) on
// every core, and stores each as a chunk as soon as it and the ones before it are
// compressed. On Postgres the chunks stream in with one COPY.
func (s *Store) StageFile(ctx context.Context, name string, r io.Reader) (StagedFile, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the compressors if the copy fails
	blocks := compressBlocks(ctx, r, StagedChunkSize, runtime.GOMAXPROCS(0))
	f := StagedFile{Name: name, BlockSize: StagedChunkSize, Codec: codecZstd}
	if s.d == Postgres {
		err := s.withPgx(ctx, func(conn *pgx.Conn) error { return stageCopy(ctx, conn, &f, blocks) })
		if !errors.Is(err, errNoPgx) {
			if err != nil {
				return StagedFile{}, fmt.Errorf("stage %s: %w", name, err)
			}
			return f, nil
		}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO subsync_staged_file (name, block_size, codec, created_at)
VALUES ($1, $2, $3, `+s.d.nowExpr()+`) RETURNING id`, name, f.BlockSize, f.Codec).Scan(&f.ID); err != nil {
			return fmt.Errorf("create staged file: %w", err)
		}
		for {
			data, err := blocks.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO subsync_staged_chunk (file_id, seq, data) VALUES ($1, $2, $3)",
				f.ID, f.Chunks, data); err != nil {
				return fmt.Errorf("store chunk %d: %w", f.Chunks, err)
			}
			f.Chunks++
		}
		f.Size = blocks.size
		return finishStaged(ctx, tx.ExecContext, f)
	})
	if err != nil {
		return StagedFile{}, fmt.Errorf("stage %s: %w", name, err)
	}
	return f, nil
}

// stageCopy stages the blocks with one COPY, in a transaction of conn's.
func stageCopy(ctx context.Context, conn *pgx.Conn, f *StagedFile, blocks *blockCompressor) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.QueryRow(ctx, `INSERT INTO subsync_staged_file (name, block_size, codec, created_at)
VALUES ($1, $2, $3, `+Postgres.nowExpr()+`) RETURNING id`, f.Name, f.BlockSize, f.Codec).Scan(&f.ID); err != nil {
		return fmt.Errorf("create staged file: %w", err)
	}
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		data, err := blocks.next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		f.Chunks++
		return []any{f.ID, f.Chunks - 1, data}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"subsync_staged_chunk"}, []string{"file_id", "seq", "data"}, rows); err != nil {
		return fmt.Errorf("copy chunks: %w", err)
	}
	f.Size = blocks.size
	exec := func(ctx context.Context, q string, args ...any) (any, error) { return tx.Exec(ctx, q, args...) }
	if err := finishStaged(ctx, exec, *f); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// finishStaged records the size and chunks of a staged file.
func finishStaged[R any](ctx context.Context, exec func(context.Context, string, ...any) (R, error), f StagedFile) error {
	if _, err := exec(ctx, "UPDATE subsync_staged_file SET size = $2, chunks = $3 WHERE id = $1", f.ID, f.Size, f.Chunks); err != nil {
		return fmt.Errorf("record staged file %d: %w", f.ID, err)
	}
	return nil
}

// StagedFileInfo returns the description of a staged file.
func (s *Store) StagedFileInfo(ctx context.Context, id int64) (StagedFile, error) {
	return stagedFileInfo(ctx, s.db, id)
}

func stagedFileInfo(ctx context.Context, q rowQuerier, id int64) (StagedFile, error) {
	f := StagedFile{ID: id}
	err := q.QueryRowContext(ctx, "SELECT name, size, chunks, block_size, codec FROM subsync_staged_file WHERE id = $1", id).
		Scan(&f.Name, &f.Size, &f.Chunks, &f.BlockSize, &f.Codec)
	if errors.Is(err, sql.ErrNoRows) {
		return StagedFile{}, fmt.Errorf("staged file %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return StagedFile{}, fmt.Errorf("read staged file %d: %w", id, err)
	}
	return f, nil
}

// OpenStaged returns the content of a staged file, decompressed, reading one chunk at a time.
func (s *Store) OpenStaged(ctx context.Context, id int64) (io.ReadCloser, error) {
	f, err := s.StagedFileInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	return newStagedReader(ctx, s.db, f)
}

// RestoreStaged writes the content of a staged file into w, from its start, and returns
// how many bytes it wrote. The chunks are read with one query and, for a file staged in
// blocks, decompressed on every core at once, each written at its place.
func (s *Store) RestoreStaged(ctx context.Context, id int64, w *os.File) (int64, error) {
	f, err := s.StagedFileInfo(ctx, id)
	if err != nil {
		return 0, err
	}
	if f.BlockSize == 0 {
		rc, err := newStagedReader(ctx, s.db, f)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		n, err := io.Copy(w, rc)
		if err != nil {
			return n, fmt.Errorf("restore staged file %d: %w", id, err)
		}
		return n, nil
	}
	if err := restoreBlocks(ctx, s.db, f, w, runtime.GOMAXPROCS(0)); err != nil {
		return 0, fmt.Errorf("restore staged file %d: %w", id, err)
	}
	return f.Size, nil
}

// DeleteStaged removes a staged file and its chunks. Deleting a missing file is not an error.
func (s *Store) DeleteStaged(ctx context.Context, id int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM subsync_staged_chunk WHERE file_id = $1", id); err != nil {
			return fmt.Errorf("delete staged file %d: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM subsync_staged_file WHERE id = $1", id); err != nil {
			return fmt.Errorf("delete staged file %d: %w", id, err)
		}
		return nil
	})
}
