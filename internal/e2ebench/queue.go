package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subsync/subsync/internal/secret"
)

// Queues. With -queue postgres every measured run of subsync gets a database of its own,
// created on the server of -database-url before the child starts and dropped after it ended:
// the run stages the file into it (EnqueueImport) and keeps River's and subsync's tables
// there, as a worker of a fleet does.
const (
	queueSQLite   = "sqlite"
	queuePostgres = "postgres"
)

// defaultDatabaseURL is the server a Postgres run creates its database on, when neither
// -database-url nor TEST_DATABASE_URL says otherwise.
const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func databaseURLDefault() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultDatabaseURL
}

// parseQueues reads -queue: sqlite, postgres, or both separated by a comma (measured in
// that order, in turn, in every run).
func parseQueues(s string) ([]string, error) {
	var qs []string
	for _, q := range strings.Split(s, ",") {
		switch q = strings.TrimSpace(q); q {
		case queueSQLite, queuePostgres:
			qs = append(qs, q)
		default:
			return nil, fmt.Errorf("-queue %q: want sqlite, postgres or sqlite,postgres", s)
		}
	}
	return qs, nil
}

// freshDatabase creates a database of its own on the server of serverURL and returns a URL
// of it and a func that drops it.
func freshDatabase(serverURL string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "e2ebench_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", secret.DSN("pgx", serverURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverURL)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2ebench: could not drop database %s: %v\n", name, err)
		}
	}
	return u.String(), drop, nil
}
