// Command goverifier checks, with the Go ecosystem's own libraries and nothing of Tollgate's, a
// checkpoint and proofs that Tollgate produced: golang.org/x/mod/sumdb/note opens the C2SP signed
// note with the published verifier key, github.com/transparency-dev/merkle verifies the RFC 6962
// inclusion proof of an event's canonical bytes and the consistency proof between two checkpoints.
//
// Input (JSON file, first argument):
//
//	{"vkey": "...", "checkpoint": "<note>", "leaf_b64": "...", "leaf_index": 3,
//	 "inclusion_proof": ["<b64>", ...],
//	 "old_checkpoint": "<note>", "consistency_proof": ["<b64>", ...],
//	 "notes": ["<any other signed note, e.g. an export's manifest.note>", ...]}
//
// Prints one JSON line and exits 0 when everything verifies, 1 (with the reason) otherwise.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

type input struct {
	VKey             string   `json:"vkey"`
	Checkpoint       string   `json:"checkpoint"`
	LeafB64          string   `json:"leaf_b64"`
	LeafIndex        uint64   `json:"leaf_index"`
	InclusionProof   []string `json:"inclusion_proof"`
	OldCheckpoint    string   `json:"old_checkpoint"`
	ConsistencyProof []string `json:"consistency_proof"`
	Notes            []string `json:"notes"`
}

type checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
}

func fail(format string, args ...any) {
	out, _ := json.Marshal(map[string]any{"ok": false, "error": fmt.Sprintf(format, args...)})
	fmt.Println(string(out))
	os.Exit(1)
}

// openCheckpoint verifies the note's signature and parses the C2SP tlog-checkpoint body.
func openCheckpoint(verifiers note.Verifiers, text string) checkpoint {
	n, err := note.Open([]byte(text), verifiers)
	if err != nil {
		fail("note.Open: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		fail("checkpoint body has %d lines", len(lines))
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		fail("checkpoint size: %v", err)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		fail("checkpoint root hash: %v", err)
	}
	return checkpoint{Origin: lines[0], Size: size, Root: root}
}

func decodeAll(in []string) [][]byte {
	out := make([][]byte, len(in))
	for i, s := range in {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			fail("proof hash %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: goverifier <input.json>")
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("read input: %v", err)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		fail("parse input: %v", err)
	}
	v, err := note.NewVerifier(in.VKey)
	if err != nil {
		fail("note.NewVerifier: %v", err)
	}
	verifiers := note.VerifierList(v)
	cp := openCheckpoint(verifiers, in.Checkpoint)

	leaf, err := base64.StdEncoding.DecodeString(in.LeafB64)
	if err != nil {
		fail("leaf: %v", err)
	}
	leafHash := rfc6962.DefaultHasher.HashLeaf(leaf)
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, in.LeafIndex, cp.Size, leafHash, decodeAll(in.InclusionProof), cp.Root); err != nil {
		fail("inclusion: %v", err)
	}
	result := map[string]any{"ok": true, "origin": cp.Origin, "size": cp.Size, "key_name": v.Name(), "inclusion": true}
	if in.OldCheckpoint != "" {
		old := openCheckpoint(verifiers, in.OldCheckpoint)
		if old.Origin != cp.Origin {
			fail("origins differ: %q vs %q", old.Origin, cp.Origin)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old.Size, cp.Size, decodeAll(in.ConsistencyProof), old.Root, cp.Root); err != nil {
			fail("consistency: %v", err)
		}
		result["consistency"] = true
		result["old_size"] = old.Size
	}
	for i, text := range in.Notes {
		if _, err := note.Open([]byte(text), verifiers); err != nil {
			fail("notes[%d]: note.Open: %v", i, err)
		}
	}
	result["notes"] = len(in.Notes)
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}
