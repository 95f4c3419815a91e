package main

// Uploaded avatars: two PNG images (100 and 500 pixels square) in the
// upload directory's blobs (store_uploads.go), named on the user's record
// and indexed in avatar_blobs so that they are served, and kept, while a
// user shows them.

import (
	"bytes"

	"go.etcd.io/bbolt"
)

// avatarChanged: a user's avatar changed (User is the account after it).
type avatarChanged struct {
	User user
}

// setAvatar makes the blobs small and medium the user's avatar (both
// empty: back to the default), a new avatar version. The blobs of the
// avatar it replaces are swept within the hour (retireBlob) rather than
// after the uploads' grace period, which avatar changes would fill the
// disk within; not at once, for a backup running meanwhile has a
// database that still names them.
func (s *store) setAvatar(u user, small, medium string) (user, error) {
	var after user
	var replaced []string
	err := s.updateReporting(func(tx *bbolt.Tx, report func(any)) error {
		current, err := lookUpUser(tx, u.ID)
		if err != nil {
			return err
		}
		replaced = []string{current.Avatar, current.AvatarMedium}
		blobs := tx.Bucket(bucketAvatarBlobs)
		for _, old := range replaced {
			if old != "" {
				if err := blobs.Delete(append([]byte(old), itob(u.ID)...)); err != nil {
					return err
				}
			}
		}
		for _, sum := range []string{small, medium} {
			if sum != "" {
				if err := blobs.Put(append([]byte(sum), itob(u.ID)...), nil); err != nil {
					return err
				}
			}
		}
		current.Avatar, current.AvatarMedium = small, medium
		current.AvatarVersion = avatarVersion(current) + 1
		if err := putUser(tx, current); err != nil {
			return err
		}
		after = current
		report(accountChanged{Email: current.Email, UserID: current.ID}) // the cached account changes
		report(avatarChanged{User: current})
		return nil
	})
	if err != nil {
		return user{}, err
	}
	for _, old := range replaced {
		if old != "" && old != small && old != medium {
			s.retireBlob(old) // swept within the hour unless something still uses it
		}
	}
	return after, nil
}

// isAvatarBlob tells whether some user shows the blob as their avatar.
func (s *store) isAvatarBlob(sum string) bool {
	found := false
	s.view(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketAvatarBlobs).Cursor().Seek([]byte(sum))
		found = k != nil && bytes.HasPrefix(k, []byte(sum))
		return nil
	})
	return found
}
