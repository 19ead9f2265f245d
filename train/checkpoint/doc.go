// Package checkpoint writes training checkpoints as directories of files published
// atomically, finds the newest complete one, verifies what it reads back, and keeps the
// last N.
//
// Layout: ROOT/step_%08d/ holds the caller's files (model.safetensors, optimizer state,
// trainer state, ...) and checkpoint.json, written last, which names the format and step
// and lists every file's size and SHA-256. A checkpoint is complete when its
// checkpoint.json is valid and every file it lists is there with the listed size; Open
// checks the SHA-256 as the file is read.
//
// A local ROOT/step_%08d may be a symbolic link to a checkpoint directory elsewhere (moved
// to another disk): it is a checkpoint like the others, and removing it removes the
// link, never what it points to.
//
// Local roots (a directory; NFS included): Save writes everything into
// ROOT/.tmp-step_%08d-RANDOM/, fsyncs each file and the directory, renames it to
// ROOT/step_%08d and fsyncs ROOT. A crash at any point leaves either the previous state
// or the new complete checkpoint, plus at worst a .tmp-* directory that Latest ignores
// and the next Save removes (first, whatever its keep). Old checkpoints are removed the same way: renamed
// to a .tmp-* name first, then deleted.
//
// S3 roots (s3://bucket/prefix, through gptkit/storage; the endpoint comes from
// $AWS_ENDPOINT_URL_S3 as for every gptkit command): S3 has no directory rename, so Save
// uploads the files first and checkpoint.json last with a conditional create
// (If-None-Match: *). Until that last object exists the checkpoint is incomplete, and
// readers skip it. Old ones are removed checkpoint.json first.
//
// One process writes a root at a time (the trainer's rank 0): Save removes stale .tmp-*
// directories it finds, which would break a concurrent Save into the same root.
//
// It is hand-written because it is small (directories, fsync, rename, one JSON manifest)
// and because the crash guarantees above are the point of it: the tests kill a process in
// the middle of Save and check that the previous checkpoint still loads.
package checkpoint
