package documents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Document is a stored trusted document.
type Document struct {
	Seq     int64     `gorm:"column:seq;primaryKey;autoIncrement"`
	ID      string    `gorm:"column:id"`
	SHA256  string    `gorm:"column:sha256"` // Hash(Body)
	Body    string    `gorm:"column:body"`
	Name    string    `gorm:"column:name"` // of its operation, or of the first of several
	Type    string    `gorm:"column:type"` // query, mutation or subscription, as Name
	Cost    int       `gorm:"column:cost"` // what each of its operations is charged, at most
	AddedAt time.Time `gorm:"column:added_at"`
}

// TableName names the table of documents for GORM.
func (Document) TableName() string { return "documents" }

// ErrNotFound is returned by Remove for an id that names no document.
var ErrNotFound = errors.New("no document with that id")

// AddResult is what Add did: how many documents it stored, and how many were listed already.
type AddResult struct{ Added, Unchanged int }

// Add stores docs, all or none, in one transaction. A document whose id is stored with the same
// body is left as it is (adding a manifest twice changes nothing); one whose id is stored with
// another body is refused, naming it: an id names one document for as long as it is listed.
func Add(ctx context.Context, db *gorm.DB, docs []Document) (AddResult, error) {
	var res AddResult
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res = AddResult{}
		for _, d := range docs {
			var stored []Document
			if err := tx.Select("id", "sha256").Where("id = ?", d.ID).Limit(1).Find(&stored).Error; err != nil {
				return err
			}
			if len(stored) > 0 {
				if stored[0].SHA256 != d.SHA256 {
					return fmt.Errorf("document %q is listed with another body: remove it first (petstore documents remove %s), or give the new one another id", d.ID, d.ID)
				}
				res.Unchanged++
				continue
			}
			d.Seq = 0
			if err := tx.Create(&d).Error; err != nil {
				return fmt.Errorf("store document %q: %w", d.ID, err)
			}
			res.Added++
		}
		return nil
	})
	return res, err
}

// List returns every document, in the order they were added.
func List(ctx context.Context, db *gorm.DB) ([]Document, error) {
	var docs []Document
	err := db.WithContext(ctx).Order("seq").Find(&docs).Error
	return docs, err
}

// Remove removes the document with id; it returns ErrNotFound when there is none.
func Remove(ctx context.Context, db *gorm.DB, id string) error {
	res := db.WithContext(ctx).Where("id = ?", id).Delete(&Document{})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// version is what tells that the table changed: seq only grows, so that an addition raises
// maxSeq and a removal lowers count.
type version struct {
	Count  int64 `gorm:"column:n"`
	MaxSeq int64 `gorm:"column:max_seq"`
}

// readVersion returns the version of the table.
func readVersion(ctx context.Context, db *gorm.DB) (version, error) {
	var v version
	err := db.WithContext(ctx).Model(&Document{}).Select("COUNT(*) AS n, COALESCE(MAX(seq), 0) AS max_seq").Scan(&v).Error
	return v, err
}
