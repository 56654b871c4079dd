package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Uploads: a file uploaded on the import page is staged (StageFile) and waits there, as an
// upload, while the person maps its columns and previews it; its import claims it (it is then
// the job's staged file, deleted when the run ends). An upload nobody imports expires and is
// deleted (DeleteExpiredUploads), as is every staged file holding an erased address
// (Store.Erase).

// MarkUpload makes a staged file an upload waiting for its import, for ttl.
func (s *Store) MarkUpload(ctx context.Context, id int64, ttl time.Duration) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_staged_file SET upload_expires = `+s.d.nowExpr()+` + $2
WHERE id = $1`, id, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("mark staged file %d an upload: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("staged file %d: %w", id, ErrNotFound)
	}
	return nil
}

// PendingUpload returns an upload still waiting for its import; ErrNotFound once it was
// imported, expired or deleted.
func (s *Store) PendingUpload(ctx context.Context, id int64) (StagedFile, error) {
	f := StagedFile{ID: id}
	err := s.db.QueryRowContext(ctx, `SELECT name, size, chunks FROM subsync_staged_file
WHERE id = $1 AND upload_expires > `+s.d.nowExpr(), id).Scan(&f.Name, &f.Size, &f.Chunks)
	if errors.Is(err, sql.ErrNoRows) {
		return StagedFile{}, fmt.Errorf("upload %d (imported already, or expired): %w", id, ErrNotFound)
	}
	if err != nil {
		return StagedFile{}, fmt.Errorf("read upload %d: %w", id, err)
	}
	return f, nil
}

// ClaimUpload takes an upload waiting for its import for the import: from then on it is an
// ordinary staged file, the job's. Claimed twice (an import sent twice), the second gets
// ErrNotFound, so one upload makes one import.
func (s *Store) ClaimUpload(ctx context.Context, id int64) (StagedFile, error) {
	f, err := s.PendingUpload(ctx, id)
	if err != nil {
		return f, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_staged_file SET upload_expires = 0
WHERE id = $1 AND upload_expires > `+s.d.nowExpr(), id)
	if err != nil {
		return StagedFile{}, fmt.Errorf("claim upload %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return StagedFile{}, fmt.Errorf("upload %d (imported already, or expired): %w", id, ErrNotFound)
	}
	return f, nil
}

// DeleteExpiredUploads deletes the uploads that waited past their time without an import, and
// returns how many.
func (s *Store) DeleteExpiredUploads(ctx context.Context) (int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM subsync_staged_file
WHERE upload_expires > 0 AND upload_expires <= `+s.d.nowExpr())
	if err != nil {
		return 0, fmt.Errorf("find expired uploads: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find expired uploads: %w", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("find expired uploads: %w", err)
	}
	for _, id := range ids {
		if err := s.DeleteStaged(ctx, id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
