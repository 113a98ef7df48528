package rest

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"petstore/apierr"
	"petstore/internal/jsonbody"
	"petstore/models"
)

// listQuery is the query of GET /v1/pets.
type listQuery struct {
	limit  *int
	status *models.PetStatus
	after  *string
}

// listParams parses the query of GET /v1/pets: limit, status and after, each at most once.
func listParams(rawQuery string) (listQuery, error) {
	var lq listQuery
	q := query{raw: rawQuery}
	if !plainQuery(rawQuery) {
		var err error
		if q.parsed, err = url.ParseQuery(rawQuery); err != nil {
			return lq, apierr.Invalid("the query string is malformed: %v", err)
		}
	}
	limitText, ok, err := q.single("limit")
	if err != nil {
		return lq, err
	}
	if ok {
		n, err := models.ParsePageSize("limit", limitText)
		if err != nil {
			return lq, err
		}
		lq.limit = &n
	}
	statusText, ok, err := q.single("status")
	if err != nil {
		return lq, err
	}
	if ok {
		st, err := models.ParsePetStatus(statusText)
		if err != nil {
			return lq, err
		}
		lq.status = &st
	}
	after, ok, err := q.single("after")
	if ok {
		lq.after = new(after)
	}
	return lq, err
}

// nextLink returns the Link header value of the page that follows the one lq asked for,
// which ended at the cursor end.
func (lq listQuery) nextLink(end string) []string {
	q := url.Values{"after": {end}}
	if lq.limit != nil {
		q.Set("limit", strconv.Itoa(*lq.limit))
	}
	if lq.status != nil {
		q.Set("status", string(*lq.status))
	}
	return []string{"</v1/pets?" + q.Encode() + `>; rel="next"`}
}

// query is a query string: parsed by url.ParseQuery, or, when plainQuery, read as it is.
type query struct {
	raw    string
	parsed url.Values // nil: raw is plain
}

// plainQuery reports whether url.ParseQuery would take every name and value of raw as it is
// and without error: no escapes (% and +), no semicolons, a few parameters (far below its
// limit). Such a query, the usual one, is read without building url.Values.
func plainQuery(raw string) bool {
	params := 1
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '%', '+', ';':
			return false
		case '&':
			if params++; params > 8 {
				return false
			}
		}
	}
	return true
}

// single returns the one value of the query parameter name, and whether it is present.
func (q query) single(name string) (string, bool, error) {
	if q.parsed != nil {
		vs, ok := q.parsed[name]
		if len(vs) > 1 {
			return "", false, apierr.Invalid("%s must be given at most once", name)
		}
		if !ok {
			return "", false, nil
		}
		return vs[0], true, nil
	}
	value, found := "", false
	for rest := q.raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		key, v, _ := strings.Cut(pair, "=")
		if key != name || pair == "" {
			continue
		}
		if found {
			return "", false, apierr.Invalid("%s must be given at most once", name)
		}
		value, found = v, true
	}
	return value, found, nil
}

// newPetBody is the wire form of NewPet: categoryId is kept raw so that only JSON integers
// are taken.
type newPetBody struct {
	Name       *string           `json:"name"`
	CategoryID jsontext.Value    `json:"categoryId"`
	Status     *models.PetStatus `json:"status"`
}

// decodeNewPet reads the body of POST /v1/pets: a JSON object of at most jsonbody.MaxBytes, sent
// as application/json and read as jsonbody.Decode reads every body. Unknown members (and
// "Name", "NAME": member names are exact), and a client-sent id, are ignored. The rules on
// the values themselves are the resolver's.
func decodeNewPet(r *http.Request) (models.NewPet, error) {
	body, err := readJSON(r)
	if err != nil {
		return models.NewPet{}, err
	}
	var in newPetBody
	if err := jsonbody.Decode(body, &in); err != nil {
		return models.NewPet{}, err
	}
	pet := models.NewPet{Status: in.Status}
	if in.Name != nil {
		pet.Name = *in.Name
	}
	if len(in.CategoryID) > 0 && string(in.CategoryID) != "null" {
		id, err := strconv.ParseInt(string(in.CategoryID), 10, 64)
		if err != nil {
			return models.NewPet{}, models.IDError("categoryId", string(in.CategoryID))
		}
		pet.CategoryID = id
	}
	return pet, nil
}

// readJSON reads a request body sent as application/json.
func readJSON(r *http.Request) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, apierr.New(apierr.UnsupportedMediaType, "Content-Type must be application/json; got %q", r.Header.Get("Content-Type"))
	}
	return jsonbody.Read(r.Body)
}
