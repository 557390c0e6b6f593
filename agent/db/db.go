// Package db is the agent's small local database (bbolt): the replicas
// assigned to this node with the status the agent last gave them, and the
// managers' addresses. It is what lets a restarted agent re-adopt running
// replicas and find the cluster again before any manager answers.
//
// A task is stored as the api.Task the dispatcher sent, with its Status
// replaced by the agent's own last status (nil when it has reported none).
package db

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jaco-project/jaco/api"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

var (
	bucketTasks = []byte("tasks")
	bucketMeta  = []byte("meta")
	keyManagers = []byte("managers")
)

// openTimeout bounds the wait for the file lock: a second agent over the
// same directory fails instead of hanging.
const openTimeout = 2 * time.Second

// DB is the agent database. Its methods are safe for concurrent use.
type DB struct {
	bolt *bolt.DB
}

// Open opens (creating if needed) the database at path.
func Open(path string) (*DB, error) {
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
	if err != nil {
		return nil, fmt.Errorf("open agent db %s: %w", path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketTasks, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("create agent db buckets in %s: %w", path, err)
	}
	return &DB{bolt: b}, nil
}

// Close closes the database file.
func (d *DB) Close() error { return d.bolt.Close() }

// PutTask stores t under its id, replacing what was there.
func (d *DB) PutTask(t *api.Task) error {
	if t.GetId() == "" {
		return errors.New("put task: empty id")
	}
	data, err := proto.Marshal(t)
	if err != nil {
		return fmt.Errorf("marshal task %s: %w", t.GetId(), err)
	}
	err = d.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).Put([]byte(t.GetId()), data)
	})
	if err != nil {
		return fmt.Errorf("put task %s: %w", t.GetId(), err)
	}
	return nil
}

// DeleteTask forgets the task id (no error when it is not stored).
func (d *DB) DeleteTask(id string) error {
	err := d.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	return nil
}

// Tasks returns every stored task, ordered by id.
func (d *DB) Tasks() ([]*api.Task, error) {
	var tasks []*api.Task
	err := d.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(k, v []byte) error {
			t := &api.Task{}
			if err := proto.Unmarshal(v, t); err != nil {
				return fmt.Errorf("unmarshal task %s: %w", k, err)
			}
			tasks = append(tasks, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	return tasks, nil
}

// SetManagers stores the managers' addresses.
func (d *DB) SetManagers(addrs []string) error {
	data, err := json.Marshal(addrs)
	if err != nil {
		return fmt.Errorf("marshal managers: %w", err)
	}
	err = d.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyManagers, data)
	})
	if err != nil {
		return fmt.Errorf("put managers: %w", err)
	}
	return nil
}

// Managers returns the stored managers' addresses (nil when none).
func (d *DB) Managers() ([]string, error) {
	var addrs []string
	err := d.bolt.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketMeta).Get(keyManagers)
		if data == nil {
			return nil
		}
		return json.Unmarshal(data, &addrs)
	})
	if err != nil {
		return nil, fmt.Errorf("read managers: %w", err)
	}
	return addrs, nil
}
