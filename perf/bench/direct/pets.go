package main

import (
	"errors"
	"log"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"
	"gorm.io/gorm"
)

// maxBody is the largest request body read: 1 MiB, as the contract says.
const maxBody = 1 << 20

// Pet is a row of the pets table and its JSON form.
type Pet struct {
	ID         int64   `json:"id" gorm:"primaryKey"`
	Name       string  `json:"name"`
	CategoryID int64   `json:"categoryId"`
	Status     *string `json:"status,omitempty"`
}

// listQuery is the query of GET /v1/pets.
type listQuery struct {
	Limit  int    `form:"limit,default=20" binding:"min=1,max=100"`
	Status string `form:"status" binding:"omitempty,oneof=available pending sold"`
}

// newPet is the body of POST /v1/pets.
type newPet struct {
	Name       string  `json:"name" binding:"required,max=255"`
	CategoryID int64   `json:"categoryId" binding:"required,min=1"`
	Status     *string `json:"status" binding:"omitempty,oneof=available pending sold"`
}

// errorBody is the contract's Error.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

// fieldMessages explain each field's rule, by struct field name.
var fieldMessages = map[string]string{
	"Limit":      "limit must be an integer from 1 to 100",
	"Status":     "status must be one of available, pending, sold",
	"Name":       "name is required: a non-blank string of at most 255 characters",
	"CategoryID": "categoryId is required: an integer from 1 to 9223372036854775807",
}

// listPets answers GET /v1/pets.
func listPets(db *gorm.DB) gin.HandlerFunc {
	return func(c *gin.Context) {
		var q listQuery
		if err := c.ShouldBindQuery(&q); err != nil {
			invalid(c, err)
			return
		}
		tx := db.WithContext(c.Request.Context()).Select("id", "name", "category_id", "status").Order("id").Limit(q.Limit)
		if q.Status != "" {
			tx = tx.Where("status = ?", q.Status)
		}
		pets := []Pet{}
		if err := tx.Find(&pets).Error; err != nil {
			internal(c, err)
			return
		}
		c.JSON(http.StatusOK, pets)
	}
}

// createPet answers POST /v1/pets.
func createPet(db *gorm.DB) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.ContentType() != "application/json" {
			fail(c, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
		var in newPet
		if err := c.ShouldBindJSON(&in); err != nil {
			if errors.As(err, new(*http.MaxBytesError)) {
				fail(c, http.StatusRequestEntityTooLarge, "payload_too_large", "the request body must be at most 1 MiB")
				return
			}
			invalid(c, err)
			return
		}
		if strings.TrimSpace(in.Name) == "" {
			fail(c, http.StatusBadRequest, "invalid_request", fieldMessages["Name"])
			return
		}
		pet := Pet{Name: in.Name, CategoryID: in.CategoryID, Status: in.Status}
		if err := db.WithContext(c.Request.Context()).Create(&pet).Error; err != nil {
			internal(c, err)
			return
		}
		c.Header("Location", "/v1/pets/"+strconv.FormatInt(pet.ID, 10))
		c.JSON(http.StatusCreated, pet)
	}
}

// getPet answers GET /v1/pets/{petId}, deprecated.
func getPet(db *gorm.DB) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Deprecation", "@1767225600")
		c.Header("Sunset", "Thu, 05 Dec 2030 00:00:00 GMT")
		c.Header("Link", `</v1/pets>; rel="successor-version"`)
		id, err := strconv.ParseInt(c.Param("petId"), 10, 64)
		if err != nil {
			fail(c, http.StatusBadRequest, "invalid_request", "petId must be an integer")
			return
		}
		var pet Pet
		err = db.WithContext(c.Request.Context()).Select("id", "name", "category_id", "status").Take(&pet, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			fail(c, http.StatusNotFound, "not_found", "pet "+strconv.FormatInt(id, 10)+" not found")
			return
		}
		if err != nil {
			internal(c, err)
			return
		}
		c.JSON(http.StatusOK, pet)
	}
}

// invalid answers 400 for a request that failed binding, naming the first bad field.
func invalid(c *gin.Context, err error) {
	var ve validator.ValidationErrors
	if errors.As(err, &ve) && len(ve) > 0 {
		if msg, ok := fieldMessages[ve[0].Field()]; ok {
			fail(c, http.StatusBadRequest, "invalid_request", msg)
			return
		}
	}
	fail(c, http.StatusBadRequest, "invalid_request", "invalid request: "+err.Error())
}

// internal logs err and answers 500 without it.
func internal(c *gin.Context, err error) {
	log.Printf("%s %s: %v", c.Request.Method, c.Request.URL.Path, err)
	fail(c, http.StatusInternalServerError, "internal_error", "internal error")
}

// fail writes an Error body and stops the chain.
func fail(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, errorBody{Code: code, Message: message, Status: status})
}
