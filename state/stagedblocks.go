package state

import (
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"
)

// The codecs of staged files.
const (
	// codecZstd: each chunk is a zstd frame of its own holding one block of the file.
	codecZstd = "zstd"
	// codecGzip: one gzip stream cut into chunks (files staged before migration 70).
	codecGzip = "gzip"
)

// blockCompressor reads a file in blocks and compresses them on several goroutines at once,
// handing them out in order (next): reading, compressing and storing the blocks go on at
// the same time, with a bounded number of blocks held.
type blockCompressor struct {
	order chan chan block // one per block, in the file's order
	size  int64           // bytes read, once next returned io.EOF
	err   error           // the reader's error, once order is closed
}

type block struct {
	data []byte
	err  error
}

// compressBlocks starts reading r in blocks of size bytes, compressed by workers goroutines
// into zstd frames at the fastest level. Cancelling ctx stops them.
func compressBlocks(ctx context.Context, r io.Reader, size, workers int) *blockCompressor {
	workers = max(workers, 1)
	c := &blockCompressor{order: make(chan chan block, workers+1)}
	type job struct {
		in  []byte
		out chan block
	}
	jobs := make(chan job)
	free := make(chan []byte, workers+2) // every buffer made fits: see below
	for range workers {
		go func() {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
			for j := range jobs {
				var data []byte
				if err == nil {
					data = enc.EncodeAll(j.in, make([]byte, 0, len(j.in)/4))
				}
				select {
				case free <- j.in[:cap(j.in)]:
				default:
				}
				j.out <- block{data: data, err: err}
			}
		}()
	}
	go func() {
		defer close(c.order)
		defer close(jobs)
		for {
			// A buffer is made only when none is free: at most one being read and one per
			// worker exist at once.
			var in []byte
			select {
			case in = <-free:
			default:
				in = make([]byte, size)
			}
			n, err := io.ReadFull(r, in)
			if n > 0 {
				out := make(chan block, 1)
				select {
				case c.order <- out:
				case <-ctx.Done():
					return
				}
				select {
				case jobs <- job{in: in[:n], out: out}:
				case <-ctx.Done():
					return
				}
				c.size += int64(n)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return
			}
			if err != nil {
				c.err = err
				return
			}
		}
	}()
	return c
}

// next returns the next compressed block; io.EOF after the last.
func (c *blockCompressor) next() ([]byte, error) {
	out, ok := <-c.order
	if !ok {
		if c.err != nil {
			return nil, fmt.Errorf("read: %w", c.err)
		}
		return nil, io.EOF
	}
	b := <-out
	if b.err != nil {
		return nil, fmt.Errorf("compress: %w", b.err)
	}
	return b.data, nil
}

// restoreBlocks writes the blocks of f (staged in blocks) into w, each at its place, read
// with one query and decompressed by workers goroutines at once.
func restoreBlocks(ctx context.Context, db *sql.DB, f StagedFile, w io.WriterAt, workers int) error {
	type job struct {
		seq  int
		data []byte
	}
	jobs := make(chan job, workers)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		rows, err := db.QueryContext(ctx, "SELECT seq, data FROM subsync_staged_chunk WHERE file_id = $1 ORDER BY seq", f.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		next := 0
		for rows.Next() {
			var j job
			if err := rows.Scan(&j.seq, &j.data); err != nil {
				return err
			}
			if j.seq != next {
				return fmt.Errorf("chunk %d missing", next)
			}
			next++
			select {
			case jobs <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if next != f.Chunks {
			return fmt.Errorf("%d chunks stored, %d recorded", next, f.Chunks)
		}
		return nil
	})
	for range max(workers, 1) {
		g.Go(func() error {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(f.BlockSize)))
			if err != nil {
				return err
			}
			defer dec.Close()
			buf := make([]byte, 0, f.BlockSize)
			for j := range jobs {
				plain, err := dec.DecodeAll(j.data, buf[:0])
				want := min(int64(f.BlockSize), f.Size-int64(j.seq)*int64(f.BlockSize))
				if err != nil {
					return fmt.Errorf("chunk %d: %w", j.seq, err)
				}
				if int64(len(plain)) != want {
					return fmt.Errorf("chunk %d: %d bytes, want %d", j.seq, len(plain), want)
				}
				if _, err := w.WriteAt(plain, int64(j.seq)*int64(f.BlockSize)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// rowQuerier is what a staged file is read with: a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// newStagedReader reads a staged file's chunks, one query each, and decompresses them as one
// stream (zstd frames one after another are one zstd stream).
func newStagedReader(ctx context.Context, q rowQuerier, f StagedFile) (io.ReadCloser, error) {
	cr := &chunkReader{ctx: ctx, q: q, f: f}
	if f.Codec == codecZstd {
		zr, err := zstd.NewReader(cr, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(uint64(f.BlockSize), 1<<20)))
		if err != nil {
			return nil, fmt.Errorf("open staged file %d: %w", f.ID, err)
		}
		return zr.IOReadCloser(), nil
	}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, fmt.Errorf("open staged file %d: %w", f.ID, err)
	}
	return zr, nil
}

type chunkReader struct {
	ctx context.Context
	q   rowQuerier
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
		err := r.q.QueryRowContext(r.ctx, "SELECT data FROM subsync_staged_chunk WHERE file_id = $1 AND seq = $2",
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

// errNoPgx: the Store's database/sql driver is not pgx's.
var errNoPgx = errors.New("not a pgx connection")

// withPgx runs fn on one of the Store's connections as a pgx connection (Postgres through
// pgx's database/sql driver), for what database/sql cannot do, such as COPY.
func (s *Store) withPgx(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errNoPgx
		}
		return fn(c.Conn())
	})
}
