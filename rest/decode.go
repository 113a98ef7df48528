package rest

import (
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf8"

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
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return lq, apierr.Invalid("the query string is malformed: %v", err)
	}
	limitText, ok, err := single(q, "limit")
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
	statusText, ok, err := single(q, "status")
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
	after, ok, err := single(q, "after")
	if ok {
		lq.after = new(after)
	}
	return lq, err
}

// nextLink returns the Link header value of the page that follows the one lq asked for,
// which ended at the cursor end.
// Its parameters are in url.Values.Encode's order and escaping, written out.
func (lq listQuery) nextLink(end string) []string {
	b := make([]byte, 0, 64)
	b = append(append(b, "</v1/pets?after="...), url.QueryEscape(end)...)
	if lq.limit != nil {
		b = strconv.AppendInt(append(b, "&limit="...), int64(*lq.limit), 10)
	}
	if lq.status != nil {
		b = append(append(b, "&status="...), url.QueryEscape(string(*lq.status))...)
	}
	return []string{string(append(b, `>; rel="next"`...))}
}

// single returns the one value of the query parameter name, and whether it is present.
func single(q url.Values, name string) (string, bool, error) {
	vs, ok := q[name]
	if len(vs) > 1 {
		return "", false, apierr.Invalid("%s must be given at most once", name)
	}
	if !ok {
		return "", false, nil
	}
	return vs[0], true, nil
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
	if pet, ok := plainNewPet(body); ok {
		return pet, nil
	}
	return fullNewPet(body)
}

// fullNewPet reads body as jsonbody.Decode reads every body.
func fullNewPet(body []byte) (models.NewPet, error) {
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
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, apierr.New(apierr.UnsupportedMediaType, "Content-Type must be application/json; got %q", ct)
		}
	}
	return jsonbody.Read(r.Body, r.ContentLength)
}

// plainNewPet reads a body of POST /v1/pets in the form clients send: one object of the
// members name (a string without escapes), categoryId (an integer) and status (a valid
// status), each at most once, in any order. For anything else it reports false, and
// fullNewPet reads the body; for a body it takes, it returns what fullNewPet returns
// (FuzzDecodeNewPet compares them), without the reflective decoder's cost.
func plainNewPet(b []byte) (pet models.NewPet, ok bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return pet, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return pet, skipSpace(b, i+1) == len(b)
	}
	var seen [len(newPetMembers)]bool
	for {
		name, j, ok := plainString(b, i)
		k := slices.Index(newPetMembers[:], string(name))
		if !ok || k < 0 || seen[k] {
			return pet, false
		}
		seen[k] = true
		if i = skipSpace(b, j); i == len(b) || b[i] != ':' {
			return pet, false
		}
		i = skipSpace(b, i+1)
		var s []byte
		switch k {
		case 0:
			s, j, ok = plainString(b, i)
			pet.Name = string(s)
		case 1:
			pet.CategoryID, j, ok = plainInt(b, i)
		case 2:
			s, j, ok = plainString(b, i)
			var st models.PetStatus
			if st, ok = models.LookupPetStatus(s); ok {
				pet.Status = &st
			}
		}
		if !ok {
			return pet, false
		}
		switch i = skipSpace(b, j); {
		case i == len(b):
			return pet, false
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == '}':
			return pet, skipSpace(b, i+1) == len(b)
		default:
			return pet, false
		}
	}
}

// newPetMembers are the members plainNewPet reads, in the order of its cases.
var newPetMembers = [...]string{"name", "categoryId", "status"}

// skipSpace returns the index of the first byte of b from i that is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at b[i:] when it has no escapes and is valid UTF-8: its
// text and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i == len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, i, false
		}
	}
	return nil, i, false
}

// plainInt reads the JSON integer at b[i:] (no fraction, no exponent) when it fits an int64:
// its value and the index after it.
func plainInt(b []byte, i int) (int64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == start || (b[start] == '0' && j > start+1) || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
		return 0, i, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	return n, j, err == nil
}
