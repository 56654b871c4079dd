package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/subsync/subsync/internal/runjson"
	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// POST /api/v1/imports: `subsync import` over HTTP. A multipart/form-data body carries the
// file (streamed to a local copy and staged as the import page stages an upload, with the
// same checks, never whole in memory), the list, and optionally the mapping file's TOML, the
// sheet and dry_run; a JSON body names a configured source instead. The list is checked with
// the service first, as the command line checks it; the answer is 202 with the job and its
// Location, or with dry_run 200 and the plan of `subsync import --dry-run --json`.

// maxFormField bounds a form field that is not the file (the mapping's TOML is the largest).
const maxFormField = 1 << 20

// importRequest is an import's fields, from a form or from JSON.
type importRequest struct {
	Source  string `json:"source"`
	List    int64  `json:"list"`
	Mapping string `json:"mapping"`
	Sheet   string `json:"sheet"`
	DryRun  bool   `json:"dry_run"`
	// file is the upload staged; zero for a source.
	file state.StagedFile
}

// fieldError is a problem with one field of a request.
type fieldError struct {
	status int
	kind   problemType
	field  string
	detail string
}

func (e *fieldError) Error() string { return e.field + ": " + e.detail }

func invalid(field, format string, args ...any) *fieldError {
	return &fieldError{http.StatusUnprocessableEntity, probInvalid, field, fmt.Sprintf(format, args...)}
}

// answer answers err: a fieldError as its problem, anything else as a failure.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, err error) {
	var fe *fieldError
	if errors.As(err, &fe) {
		s.problem(w, fe.status, fe.kind, fe.field, fe.detail)
		return
	}
	s.apiFail(w, r, err)
}

func (s *Server) apiImport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := s.readImport(w, r)
	if err != nil {
		s.answer(w, r, err)
		return
	}
	if req.file.ID != 0 {
		// The staged upload goes unless the import claims it.
		defer func() {
			if _, perr := s.b.State().PendingUpload(context.WithoutCancel(ctx), req.file.ID); perr == nil {
				_ = s.b.State().DeleteStaged(context.WithoutCancel(ctx), req.file.ID)
			}
		}()
	}
	args, err := s.importArgs(ctx, req)
	if err != nil {
		s.answer(w, r, err)
		return
	}
	if req.DryRun {
		s.planImport(w, r, req, args)
		return
	}
	var id int64
	if req.file.ID != 0 {
		f, cerr := s.b.State().ClaimUpload(ctx, req.file.ID)
		if cerr != nil {
			s.apiFail(w, r, cerr)
			return
		}
		id, err = s.b.EnqueueStaged(ctx, args, f)
	} else {
		id, err = s.b.EnqueueImport(ctx, args)
	}
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.log.InfoContext(ctx, "import queued through the API", slog.Int64("job_id", id), slog.Int64("list_id", args.ListID),
		slog.String("token", callOf(ctx).token))
	accepted(w, id)
}

// importArgs checks the request's list and mapping and makes the job's arguments.
func (s *Server) importArgs(ctx context.Context, req importRequest) (jobs.ImportArgs, error) {
	args := jobs.ImportArgs{Source: req.Source, ListID: req.List, Sheet: req.Sheet}
	if req.file.ID == 0 && req.Source == "" {
		return args, invalid("file", "give a file to import (the form's file field), or a configured source (JSON {\"source\": NAME})")
	}
	if req.List <= 0 {
		return args, invalid("list", "want the id of the list to import into")
	}
	if req.Mapping != "" {
		spec, err := mapping.ParseSpec([]byte(req.Mapping))
		if err != nil {
			return args, invalid("mapping", "%v", err)
		}
		args.Mapping = &spec
	}
	if req.Source != "" {
		if err := s.b.CheckSource(req.Source); err != nil {
			return args, invalid("source", "%q: no [sources.%s] in the worker's configuration", req.Source, req.Source)
		}
	}
	if err := s.b.CheckList(ctx, req.List); errors.Is(err, jobs.ErrNoSuchList) {
		return args, invalid("list", "%d: the service has no such list (subsync lists ls shows them)", req.List)
	} else if err != nil {
		return args, &fieldError{http.StatusBadGateway, probService, "list", err.Error()}
	}
	return args, nil
}

// planImport answers a dry run: the plan of `subsync import --dry-run --json`.
func (s *Server) planImport(w http.ResponseWriter, r *http.Request, req importRequest, args jobs.ImportArgs) {
	ctx := r.Context()
	dontKeep(r)
	if req.file.ID != 0 {
		path, cleanup, err := s.b.RestoreStaged(ctx, req.file)
		if err != nil {
			s.apiFail(w, r, err)
			return
		}
		defer cleanup()
		args.Path = path
	}
	p, err := s.b.PlanImport(ctx, args, nil)
	if err != nil {
		detail := err.Error()
		if args.Path != "" {
			detail = strings.ReplaceAll(detail, args.Path, req.file.Name)
		}
		s.problem(w, http.StatusUnprocessableEntity, probNotImportable, "file", "dry run: "+detail)
		return
	}
	writeJSON(w, http.StatusOK, runjson.FromPlan(p))
}

// readImport reads the request's body: JSON naming a source, or a form with the file, which
// is staged as it streams in (an upload over web.max_upload_size is refused, 413, with
// nothing kept).
func (s *Server) readImport(w http.ResponseWriter, r *http.Request) (importRequest, error) {
	var req importRequest
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		dec := json.NewDecoder(io.LimitReader(r.Body, maxFormField))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return req, &fieldError{http.StatusBadRequest, probInvalid, "body", "the JSON body could not be read: " + err.Error()}
		}
		if req.Source == "" {
			return req, invalid("source", "name a configured source, or send the file as multipart/form-data")
		}
		return req, nil
	case "multipart/form-data":
	default:
		return req, &fieldError{http.StatusUnsupportedMediaType, probInvalid, "Content-Type",
			"send the file as multipart/form-data, or JSON naming a configured source"}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.maxUpload()+2*maxFormField) // the file and the fields around it
	err := s.readForm(r, &req)
	if err != nil && req.file.ID != 0 {
		_ = s.b.State().DeleteStaged(context.WithoutCancel(r.Context()), req.file.ID)
		req.file = state.StagedFile{}
	}
	return req, err
}

// readForm reads the form's parts in the order they come; the file is staged.
func (s *Server) readForm(r *http.Request, req *importRequest) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return &fieldError{http.StatusBadRequest, probInvalid, "body", "the form could not be read: " + err.Error()}
	}
	tooLarge := &fieldError{http.StatusRequestEntityTooLarge, probTooLarge, "file",
		fmt.Sprintf("the file is larger than the %s the API takes (web.max_upload_size): import it with subsync import", formatBytes(s.maxUpload()))}
	for {
		part, err := mr.NextPart()
		var big *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &big):
			return tooLarge
		case err != nil:
			return &fieldError{http.StatusBadRequest, probInvalid, "body", "the form could not be read: " + err.Error()}
		}
		name := part.FormName()
		if name == "file" {
			if req.file.ID != 0 {
				return invalid("file", "give one file")
			}
			f, err := s.b.StageUpload(r.Context(), part.FileName(), &limited{r: part, left: s.maxUpload()})
			switch {
			case errors.As(err, &big), errors.Is(err, errTooLarge):
				return tooLarge
			case errors.Is(err, jobs.ErrNotImportable):
				return &fieldError{http.StatusUnprocessableEntity, probNotImportable, "file", err.Error()}
			case err != nil:
				return err
			}
			req.file = f
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
		if errors.As(err, &big) {
			return tooLarge
		}
		if err != nil {
			return &fieldError{http.StatusBadRequest, probInvalid, name, "could not be read: " + err.Error()}
		}
		if len(value) > maxFormField {
			return invalid(name, "longer than %s", formatBytes(maxFormField))
		}
		if err := req.set(name, strings.TrimSpace(string(value))); err != nil {
			return err
		}
	}
}

// set sets a form field.
func (req *importRequest) set(name, v string) error {
	switch name {
	case "list":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return invalid("list", "%q: want the id of the list to import into", v)
		}
		req.List = n
	case "mapping":
		req.Mapping = v
	case "sheet":
		req.Sheet = v
	case "dry_run":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return invalid("dry_run", "%q: want true or false", v)
		}
		req.DryRun = b
	case "source":
		return invalid("source", "a source is named in a JSON body, without a file")
	default:
		return invalid(name, "unknown field: want file, list, mapping, sheet or dry_run")
	}
	return nil
}
