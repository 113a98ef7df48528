package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"petstore/testkit/mariadbd"
)

// startDatabase makes a fresh data directory dir, starts a mariadbd of the run's own on it
// on a free loopback port, and creates the run's database there.
func startDatabase(ctx context.Context, dir string) (*mariadbd.Server, error) {
	bin, err := mariadbd.Binary()
	if err != nil {
		return nil, err
	}
	if err := mariadbd.Install(dir); err != nil {
		return nil, err
	}
	s, err := mariadbd.Launch(ctx, mariadbd.Config{Binary: bin, Dir: dir, ServerID: 1})
	if err != nil {
		return nil, err
	}
	if err := createDatabase(ctx, s); err != nil {
		return s, err
	}
	return s, nil
}

// stopDatabase stops the run's mariadbd (when it started) and, unless keep, removes its data
// directory dir.
func stopDatabase(s *mariadbd.Server, dir string, keep bool) {
	if s != nil {
		if err := s.Stop(); err != nil {
			log.Printf("stopping MariaDB: %v", err)
		}
	}
	if !keep {
		if err := os.RemoveAll(dir); err != nil {
			log.Print(err)
		}
	}
}

// openMySQL opens server s as root, in database name ("" for none).
func openMySQL(s *mariadbd.Server, name string) (*sql.DB, error) {
	cfg := mysqldriver.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), name
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 30*time.Second, 30*time.Second
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// createDatabase creates the run's database on s.
func createDatabase(ctx context.Context, s *mariadbd.Server) error {
	db, err := openMySQL(s, "")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+dbName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	return err
}

// storedPets returns the ids of the stored pets by name.
func storedPets(ctx context.Context, s *mariadbd.Server) (map[string][]int64, error) {
	db, err := openMySQL(s, dbName)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT id, name FROM pets ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byName := map[string][]int64{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		byName[name] = append(byName[name], id)
	}
	return byName, rows.Err()
}

// sleep waits for d, or returns ctx's error when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
