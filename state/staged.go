package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
)

// StagedChunkSize is the size of one stored chunk of a staged file (compressed bytes).
const StagedChunkSize = 1 << 20

// StagedFile describes a file staged into the database.
type StagedFile struct {
	ID     int64
	Name   string // the original file name, for people
	Size   int64  // uncompressed bytes
	Chunks int
}

// StageFile copies r into the database, gzip-compressed, in chunks of StagedChunkSize, in
// one transaction: a file is staged completely or not at all.
func (s *Store) StageFile(ctx context.Context, name string, r io.Reader) (StagedFile, error) {
	f := StagedFile{Name: name}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO subsync_staged_file (name, created_at)
VALUES ($1, `+s.d.nowExpr()+`) RETURNING id`, name).Scan(&f.ID); err != nil {
			return fmt.Errorf("create staged file: %w", err)
		}
		cw := &chunkWriter{ctx: ctx, tx: tx, fileID: f.ID}
		zw := gzip.NewWriter(cw)
		n, err := io.Copy(zw, r)
		if err != nil {
			return fmt.Errorf("stage %s: %w", name, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("stage %s: %w", name, err)
		}
		if err := cw.flush(); err != nil {
			return err
		}
		f.Size, f.Chunks = n, cw.seq
		if _, err := tx.ExecContext(ctx, "UPDATE subsync_staged_file SET size = $2, chunks = $3 WHERE id = $1",
			f.ID, f.Size, f.Chunks); err != nil {
			return fmt.Errorf("stage %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return StagedFile{}, err
	}
	return f, nil
}

type chunkWriter struct {
	ctx    context.Context
	tx     *sql.Tx
	fileID int64
	seq    int
	buf    bytes.Buffer
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for w.buf.Len() >= StagedChunkSize {
		if err := w.store(w.buf.Next(StagedChunkSize)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *chunkWriter) flush() error {
	if w.buf.Len() == 0 {
		return nil
	}
	return w.store(w.buf.Next(w.buf.Len()))
}

func (w *chunkWriter) store(data []byte) error {
	if _, err := w.tx.ExecContext(w.ctx, "INSERT INTO subsync_staged_chunk (file_id, seq, data) VALUES ($1, $2, $3)",
		w.fileID, w.seq, data); err != nil {
		return fmt.Errorf("store chunk %d of staged file %d: %w", w.seq, w.fileID, err)
	}
	w.seq++
	return nil
}

// StagedFileInfo returns the description of a staged file.
func (s *Store) StagedFileInfo(ctx context.Context, id int64) (StagedFile, error) {
	f := StagedFile{ID: id}
	err := s.db.QueryRowContext(ctx, "SELECT name, size, chunks FROM subsync_staged_file WHERE id = $1", id).
		Scan(&f.Name, &f.Size, &f.Chunks)
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
	cr := &chunkReader{ctx: ctx, s: s, f: f}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("open staged file %d: %w", id, err)
	}
	return zr, nil
}

type chunkReader struct {
	ctx context.Context
	s   *Store
	f   StagedFile
	seq int
	cur []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.seq >= r.f.Chunks {
			return 0, io.EOF
		}
		var data []byte
		err := r.s.db.QueryRowContext(r.ctx, "SELECT data FROM subsync_staged_chunk WHERE file_id = $1 AND seq = $2",
			r.f.ID, r.seq).Scan(&data)
		if err != nil {
			return 0, fmt.Errorf("read chunk %d of staged file %d: %w", r.seq, r.f.ID, err)
		}
		r.cur = data
		r.seq++
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
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
