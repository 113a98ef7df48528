package rest

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unsafe"

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
		lq.limit = pageSize(n)
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
		lq.after = new(string) // allocated here, not for every query: after itself would be
		*lq.after = after
	}
	return lq, err
}

// pageSizes holds every page size in range, which pageSize points at: read-only.
var pageSizes = func() (t [models.MaxPageSize + 1]int) {
	for n := range t {
		t[n] = n
	}
	return t
}()

// pageSize returns a pointer to n: shared for a size in range, for which the query needs no
// allocation, else n's own.
func pageSize(n int) *int {
	if n >= 0 && n < len(pageSizes) {
		return &pageSizes[n]
	}
	p := new(int) // allocated here, not for every query: n itself would be
	*p = n
	return p
}

// nextLink returns the Link header value of the page that follows the one lq asked for,
// which ended at the cursor end: its query is what url.Values.Encode writes (keys sorted,
// values escaped), written without the map. The value and its text are one allocation.
func (lq listQuery) nextLink(end string) []string {
	link := new(linkValue)
	b := link.text[:0]
	b = append(append(b, "</v1/pets?after="...), url.QueryEscape(end)...)
	if lq.limit != nil {
		b = strconv.AppendInt(append(b, "&limit="...), int64(*lq.limit), 10)
	}
	if lq.status != nil {
		b = append(append(b, "&status="...), url.QueryEscape(string(*lq.status))...)
	}
	b = append(b, `>; rel="next"`...)
	if len(b) > len(link.text) { // beyond the array, in a slice of its own
		link.value[0] = string(b)
	} else { // the text is not written again once the string shares it
		link.value[0] = unsafe.String(&link.text[0], len(b))
	}
	return link.value[:]
}

// linkValue is a Link header value and its text.
type linkValue struct {
	value [1]string
	text  [96]byte // any link of this service: its cursors have at most 36 characters
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
