package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// BenchmarkStartup measures the real binary from exec to its first served
// request on a database of 100,000 users and 10,000,000 unread entries
// (100 for each user): start-up must not depend on the data's size.
//
//	go test -run XXX -bench Startup -benchtime 20x
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	db := filepath.Join(dir, "big.db")
	st, err := openStore(db, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	const users, unreadEach = 100_000, 100
	ch := mustCreateChannel(b, st, "general", false)
	for start := 0; start < users; start += 10_000 {
		err := st.db.Update(func(tx *bbolt.Tx) error {
			ub := tx.Bucket(bucketUsers)
			ub.FillPercent = 1.0
			for i := start; i < start+10_000; i++ {
				id, err := ub.NextSequence()
				if err != nil {
					return err
				}
				email := "user" + strconv.Itoa(i) + "@example.com"
				if err := putUser(tx, user{ID: id, Email: email, FullName: email, Role: roleMember, Active: true}); err != nil {
					return err
				}
				if err := tx.Bucket(bucketUserEmails).Put(emailKey(email), itob(id)); err != nil {
					return err
				}
				ids := make([]uint64, unreadEach)
				for j := range ids {
					ids[j] = uint64(i*unreadEach + j + 1)
				}
				if err := addToSet(tx.Bucket(bucketUnreadBelow), unreadKey(id, ch.ID), ids); err != nil { // as if marked unread one by one
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := st.close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(db)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("database: %d users, %d unread entries, %d MiB", users, users*unreadEach, fi.Size()>>20)

	bin := e2eBuildBinary(b)
	client := &http.Client{Timeout: time.Second}
	for b.Loop() {
		b.StopTimer()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "serve", "--db", db, "--addr", addr)
		b.StartTimer()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			resp, err := client.Get("http://" + addr + "/api/v1/server_settings")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
		b.StopTimer()
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			b.Fatal(err)
		}
		cmd.Wait() // its exit status is not what is measured
		b.StartTimer()
	}
}
