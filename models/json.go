package models

import (
	"strconv"

	"petstore/internal/jsonstr"
)

// AppendJSON appends p as json.Marshal writes it, without reflection: REST answers every list
// with it. FuzzPetJSON checks the two agree byte for byte.
func (p *Pet) AppendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"id":`...), p.ID, 10)
	b = jsonstr.Append(append(b, `,"name":`...), p.Name)
	b = strconv.AppendInt(append(b, `,"categoryId":`...), p.CategoryID, 10)
	if p.Status != nil {
		b = appendStatus(b, *p.Status)
	}
	return append(b, '}')
}

// appendStatus appends the status member of a pet: written out for the three statuses.
func appendStatus(b []byte, s PetStatus) []byte {
	switch s {
	case PetStatusAvailable:
		return append(b, `,"status":"available"`...)
	case PetStatusPending:
		return append(b, `,"status":"pending"`...)
	case PetStatusSold:
		return append(b, `,"status":"sold"`...)
	}
	return jsonstr.Append(append(b, `,"status":`...), string(s))
}

// AppendPetsJSON appends pets as a JSON array, as json.Marshal writes a non-nil slice of
// them; no pets is [].
func AppendPetsJSON(b []byte, pets []Pet) []byte {
	b = append(b, '[')
	for i := range pets {
		if i > 0 {
			b = append(b, ',')
		}
		b = pets[i].AppendJSON(b)
	}
	return append(b, ']')
}
