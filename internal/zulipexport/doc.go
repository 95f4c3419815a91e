// Package zulipexport is Zulip's realm-export format, the directory
// `manage.py export` writes and `manage.py import` reads
// (zerver/lib/export.py, zerver/lib/import_realm.py): the rows of its
// files, a reader that streams them a row at a time through one os.Root
// on the export (no path in an export reads a file outside it), a writer
// that makes each file whole or not at all, and the rules of Zulip's
// importer (file names, flag bits, recipient types, dates, the tables it
// requires, its rewriting of upload links).
//
//	DIR/realm.json            the realm's tables: users, streams, recipients,
//	                          subscriptions, reactions, …
//	DIR/messages-000001.json  zerver_message and zerver_usermessage,
//	DIR/messages-000002.json  MessagesPerFile messages a file
//	DIR/attachment.json       zerver_attachment
//	DIR/uploads/records.json  one record an uploaded file; its bytes beside it
//	DIR/avatars/records.json  one record an avatar image; its bytes beside it
//
// It knows nothing of zulite's store: the core's export walks the store
// and hands it rows, and the core's import reads rows from it and writes
// the store. It never imports bbolt, net/http, or package main's types,
// and calls back into the core only through the file-writing function
// NewWriter takes.
package zulipexport
