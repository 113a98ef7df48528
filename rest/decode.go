package rest

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"

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
