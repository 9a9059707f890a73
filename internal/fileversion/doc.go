// Package fileversion names the versions of a file, so that what was read
// from one version, its sha256 (a Sum), can be kept and believed until the
// file changes, without reading it again. host/trust keeps Sums for one
// process and for the declaration cache, and transport/wasm keeps a module
// file's in a SumDir, across processes.
//
// A version is what stat says of the file; nothing of its contents is
// read. Two rules make a kept sum safe to believe:
//
//   - The version names everything a change of contents changes. On Linux
//     that includes the status-change time, which a write, a chmod, a
//     rename or setting the modification time back all set to the current
//     time, and which the file's owner cannot set (Version.Strong).
//     Elsewhere it is only the size and the modification time, which an
//     owner can set back.
//   - A sum is kept beyond the process only if the file had gone unchanged
//     for SettleTime when it was read (Version.Settled): a write within the
//     clock's granularity of the one before may leave the timestamps as
//     they were, but never one that far after.
package fileversion
