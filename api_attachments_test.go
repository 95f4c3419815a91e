package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// attachmentsOf answers GET /attachments as a.
func (e *testEnv) attachmentsOf(t *testing.T, a *account) ([]any, float64) {
	t.Helper()
	r := e.request(t, http.MethodGet, "/api/v1/attachments", nil, a)
	wantAPISuccess(t, r)
	list, _ := r.body["attachments"].([]any)
	used, _ := r.body["upload_space_used"].(float64)
	return list, used
}

func TestAttachments_ListsOwnUploadsWithTheMessagesThatLinkThem(t *testing.T) {
	e := newTestEnv(t)
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["attachment"]`}}).str("queue_id")
	plan := e.mustUpload(t, &e.alice, "plan.txt", "the plan")
	e.mustUpload(t, &e.bob, "bobs.txt", "bob's file")
	msg := e.sendText(t, e.alice, e.general, "[plan]("+plan+")")

	list, used := e.attachmentsOf(t, &e.alice)
	if len(list) != 1 || used != float64(len("the plan")+len("bob's file")) {
		t.Fatalf("alice's attachments: got %v, used %v; want her one file and everyone's bytes", list, used)
	}
	a := object(list[0])
	if a["name"] != "plan.txt" || "/user_uploads/"+a["path_id"].(string) != plan || a["size"] != float64(len("the plan")) || a["create_time"].(float64) < 1e12 {
		t.Errorf("attachment: got %v, want plan.txt at %s, its size, create_time in milliseconds", a, plan)
	}
	if uses := a["messages"].([]any); len(uses) != 1 || object(uses[0])["id"] != float64(msg) || object(uses[0])["date_sent"].(float64) < 1e12 {
		t.Errorf("messages: got %v, want message %d with date_sent in milliseconds", uses, msg)
	}
	got := e.pollNow(t, &e.alice, queue, -1)
	if len(got) != 1 || got[0]["op"] != "add" || object(got[0]["attachment"])["id"] != a["id"] || got[0]["upload_space_used"] != float64(len("the plan")) {
		t.Errorf("the upload's event: got %v, want attachment add with its id and the bytes then", got)
	}
}

func TestAttachments_RemoveDeletesTheFileNotTheMessage(t *testing.T) {
	e := newTestEnv(t)
	plan := e.mustUpload(t, &e.alice, "plan.txt", "the plan")
	msg := e.sendText(t, e.alice, e.general, "[plan]("+plan+")")
	list, _ := e.attachmentsOf(t, &e.alice)
	if len(list) != 1 {
		t.Fatalf("alice's attachments: got %v, want her file", list)
	}
	id := strconv.FormatFloat(object(list[0])["id"].(float64), 'f', -1, 64)
	queue := e.registerQueue(t, &e.alice, url.Values{"event_types": {`["attachment"]`}}).str("queue_id")

	wantAPISuccess(t, e.request(t, http.MethodDelete, "/api/v1/attachments/"+id, nil, &e.alice))
	if list, used := e.attachmentsOf(t, &e.alice); len(list) != 0 || used != 0 {
		t.Errorf("after removing: got %v, used %v; want none", list, used)
	}
	if rec := e.fetch(t, &e.alice, plan); rec.Code != http.StatusNotFound {
		t.Errorf("the removed file's link: got %d, want 404", rec.Code)
	}
	var m message
	mustView(t, e.st, func(tx *bbolt.Tx) (err error) { m, err = messageByID(tx, msg); return err })
	if !strings.Contains(m.Content, plan) {
		t.Errorf("the message that linked it: got %q, want it unchanged", m.Content)
	}
	got := e.pollNow(t, &e.alice, queue, -1)
	if len(got) != 1 || got[0]["op"] != "remove" || object(got[0]["attachment"])["id"] != object(list[0])["id"] || got[0]["upload_space_used"] != float64(0) {
		t.Errorf("the removal's event: got %v, want attachment remove naming its id alone", got)
	}
	// Again: it is gone.
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/attachments/"+id, nil, &e.alice), 400, "BAD_REQUEST", "Invalid attachment")
	wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/attachments/x", nil, &e.alice), 404, "BAD_REQUEST", "Not Found")
}

func TestAttachments_NobodyRemovesAnothersFile(t *testing.T) {
	e := newTestEnv(t)
	plan := e.mustUpload(t, &e.alice, "plan.txt", "the plan")
	list, _ := e.attachmentsOf(t, &e.alice)
	if len(list) != 1 {
		t.Fatalf("alice's attachments: got %v, want her file", list)
	}
	id := strconv.FormatFloat(object(list[0])["id"].(float64), 'f', -1, 64)
	for _, who := range []*account{&e.bob, &e.owner} {
		wantAPIError(t, e.request(t, http.MethodDelete, "/api/v1/attachments/"+id, nil, who), 400, "BAD_REQUEST", "Invalid attachment")
	}
	if list, _ := e.attachmentsOf(t, &e.alice); len(list) != 1 {
		t.Errorf("alice's file after others tried: got %v, want it kept", list)
	}
	if rec := e.fetch(t, &e.alice, plan); rec.Code != http.StatusOK {
		t.Errorf("alice's file: got %d, want 200", rec.Code)
	}
}

func TestAttachments_RecordsFromBeforeIDsAreNumberedOnOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zulite.db")
	st, err := openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := mustCreateUser(t, st, "alice@example.com", roleMember, false)
	old := attachment{PathID: "2/ab/old.txt", Owner: u.ID, Name: "old.txt", Size: 3, SHA256: strings.Repeat("a", 64), Created: 1}
	if err := st.addAttachment(u, old, uploadQuota{}); err != nil {
		t.Fatal(err)
	}
	// As a schema-3 file, written before records had ids.
	if err := st.update(func(tx *bbolt.Tx) error {
		if err := putJSON(tx.Bucket(bucketAttachments), []byte(old.PathID), old); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, itob(3))
	}); err != nil {
		t.Fatal(err)
	}
	st.close()
	st, err = openStore(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	list, _, err := st.ownAttachments(u)
	if err != nil || len(list) != 1 || list[0].ID == 0 {
		t.Fatalf("after reopening: got %v (%v), want the file with an id", list, err)
	}
	if err := st.removeAttachment(u, list[0].ID); err != nil {
		t.Errorf("removing it by that id: %v", err)
	}
}
