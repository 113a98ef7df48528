package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Rules of the contract.
const (
	maxBody       = 1 << 20 // bytes of a request body
	maxNameLength = 255     // Unicode characters of a name
	defaultLimit  = 20
	maxLimit      = 100
)

// listPets answers GET /v1/pets.
func (s *server) listPets(w http.ResponseWriter, r *http.Request) {
	limit, status, msg := listParams(r.URL.RawQuery)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request", msg)
		return
	}
	var rows *sql.Rows
	var err error
	if status == "" {
		rows, err = s.list.QueryContext(r.Context(), limit)
	} else {
		rows, err = s.listStatus.QueryContext(r.Context(), status, limit)
	}
	if err != nil {
		internal(w, r, err)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	b, err := appendRows(append(*buf, '['), rows)
	if err != nil {
		internal(w, r, err)
		return
	}
	*buf = append(b, ']')
	writeJSON(w, http.StatusOK, *buf)
}

// appendRows appends the pets of rows, comma-separated, and closes rows.
func appendRows(b []byte, rows *sql.Rows) ([]byte, error) {
	defer rows.Close()
	var id, category int64
	var name, status sql.RawBytes
	for n := 0; rows.Next(); n++ {
		if err := rows.Scan(&id, &name, &category, &status); err != nil {
			return b, err
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = appendPet(b, id, name, category, status)
	}
	return b, rows.Err()
}

// listParams parses the query of GET /v1/pets: limit and status, each at most once; it returns
// a message for the client when the query breaks the rules.
func listParams(rawQuery string) (limit int, status, msg string) {
	limit = defaultLimit
	var seenLimit, seenStatus bool
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		name, value, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(value, "%+") {
			var err error
			if value, err = url.QueryUnescape(value); err != nil {
				return 0, "", "the query string is malformed"
			}
		}
		switch name {
		case "limit":
			n, err := strconv.Atoi(value)
			if seenLimit || err != nil || n < 1 || n > maxLimit {
				return 0, "", "limit must be an integer from 1 to 100, given at most once"
			}
			limit, seenLimit = n, true
		case "status":
			if seenStatus || !validStatus(value) {
				return 0, "", "status must be one of available, pending, sold, given at most once"
			}
			status, seenStatus = value, true
		}
	}
	return limit, status, ""
}

func validStatus(s string) bool { return s == "available" || s == "pending" || s == "sold" }

// newPetBody is the wire form of NewPet; categoryId is kept raw so that only JSON integers
// are taken.
type newPetBody struct {
	Name       *string         `json:"name"`
	CategoryID json.RawMessage `json:"categoryId"`
	Status     *string         `json:"status"`
}

// createPet answers POST /v1/pets.
func (s *server) createPet(w http.ResponseWriter, r *http.Request) {
	if status, code, msg := checkContentType(r.Header.Get("Content-Type")); status != 0 {
		writeError(w, status, code, msg)
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	body := bytes.NewBuffer((*buf)[:0])
	if _, err := body.ReadFrom(io.LimitReader(r.Body, maxBody+1)); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the request body could not be read")
		return
	}
	if body.Len() > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "the request body must be at most 1 MiB")
		return
	}
	name, category, status, msg := decodeNewPet(body.Bytes())
	*buf = body.Bytes()
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request", msg)
		return
	}
	res, err := s.insert.ExecContext(r.Context(), name, category, status)
	if err != nil {
		internal(w, r, err)
		return
	}
	id, err := res.LastInsertId()
	if err != nil {
		internal(w, r, err)
		return
	}
	w.Header()["Location"] = []string{"/v1/pets/" + strconv.FormatInt(id, 10)}
	out := appendPetString(getBuffer(), id, name, category, status)
	writeJSON(w, http.StatusCreated, *out)
	putBuffer(out)
}

// checkContentType returns the status, code and message of the answer to a POST whose
// Content-Type is not JSON, or a zero status.
func checkContentType(ct string) (int, string, string) {
	if ct == "application/json" {
		return 0, "", ""
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return 0, "", ""
	}
	return http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json"
}

// decodeNewPet decodes and checks the body of POST /v1/pets; status is nil when absent or
// null. It returns a message for the client when the body breaks the rules.
func decodeNewPet(body []byte) (name string, category int64, status any, msg string) {
	var in newPetBody
	if err := json.Unmarshal(body, &in); err != nil || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return "", 0, nil, "the request body must be a JSON object: NewPet"
	}
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" || utf8.RuneCountInString(*in.Name) > maxNameLength {
		return "", 0, nil, "name is required: a non-blank string of at most 255 characters"
	}
	category, err := strconv.ParseInt(string(in.CategoryID), 10, 64)
	if err != nil || category < 1 {
		return "", 0, nil, "categoryId is required: an integer from 1 to 9223372036854775807"
	}
	if in.Status != nil {
		if !validStatus(*in.Status) {
			return "", 0, nil, "status must be one of available, pending, sold"
		}
		status = *in.Status
	}
	return *in.Name, category, status, ""
}

// getPet answers GET /v1/pets/{petId}, deprecated.
func (s *server) getPet(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Deprecation"] = []string{"@1767225600"}
	h["Sunset"] = []string{"Thu, 05 Dec 2030 00:00:00 GMT"}
	h["Link"] = []string{`</v1/pets>; rel="successor-version"`}
	id, err := strconv.ParseInt(r.PathValue("petId"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "petId must be an integer")
		return
	}
	var name string
	var category int64
	var status sql.NullString
	err = s.get.QueryRowContext(r.Context(), id).Scan(&id, &name, &category, &status)
	if errors.Is(err, sql.ErrNoRows) {
		writeError(w, http.StatusNotFound, "not_found", "pet "+strconv.FormatInt(id, 10)+" not found")
		return
	}
	if err != nil {
		internal(w, r, err)
		return
	}
	var st any
	if status.Valid {
		st = status.String
	}
	buf := appendPetString(getBuffer(), id, name, category, st)
	writeJSON(w, http.StatusOK, *buf)
	putBuffer(buf)
}

// internal logs err and answers 500 without it.
func internal(w http.ResponseWriter, r *http.Request, err error) {
	log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
	writeError(w, http.StatusInternalServerError, "internal_error", "internal error")
}
