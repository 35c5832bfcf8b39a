// Package renderworker renders Applications in bounded child processes of the gitsync
// binary (`gitsync render-worker`), so that what a tenant commits never runs in the
// operator's address space.
package renderworker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gitsync-dev/gitsync/internal/render"
)

// The parent and a worker speak in frames: a 4-byte big-endian length, then one JSON
// message. The parent sends a render; while it runs the worker may send calls (what the
// render takes from the cluster, served by the parent with the Application's identity),
// each answered by one reply; the worker ends the render with its result.

const (
	kindReady  = "ready"
	kindRender = "render"
	kindCall   = "call"
	kindReply  = "reply"
	kindResult = "result"
)

// message is one frame.
type message struct {
	Kind   string         `json:"kind"`
	Render *renderRequest `json:"render,omitempty"`
	Call   *call          `json:"call,omitempty"`
	Reply  *reply         `json:"reply,omitempty"`
	Result *result        `json:"result,omitempty"`
}

// renderRequest is one Application to render.
type renderRequest struct {
	App    json.RawMessage `json:"app"`
	Source render.Source   `json:"source"`
	// Has names the parts of render.Cluster the parent serves; an absent part is offline.
	Has clusterParts `json:"has"`
	// Offline: the parent rendered without a cluster (render.Result.Offline).
	Offline bool `json:"offline,omitempty"`
	// CPUSeconds is the CPU time this render may take.
	CPUSeconds uint64 `json:"cpuSeconds"`
}

// clusterParts says which functions of render.Cluster the parent has.
type clusterParts struct {
	Discovery, Values, Lookup, Dependencies, IsNamespaced, Keys, Variables bool
}

// call is a worker's request for something the render takes from the cluster.
type call struct {
	Method string          `json:"method"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// reply answers a call.
type reply struct {
	Value json.RawMessage `json:"value,omitempty"`
	Err   *wireError      `json:"err,omitempty"`
}

// result ends a render.
type result struct {
	Objects []json.RawMessage `json:"objects,omitempty"`
	Chart   chartInfo         `json:"chart"`
	// Encrypted, Sensitive and Chart.CRDs keep nil apart from empty (no omitempty), as
	// render.Render returns them.
	Encrypted []string   `json:"encrypted"`
	Sensitive []string   `json:"sensitive"`
	Err       *wireError `json:"err,omitempty"`
}

// chartInfo is render.Chart on the wire.
type chartInfo struct {
	Name       string          `json:"name,omitempty"`
	Version    string          `json:"version,omitempty"`
	CRDs       map[string]bool `json:"crds"`
	CreateOnly bool            `json:"createOnly,omitempty"`
}

// Error classes kept across the process boundary, so that the parent tells a retryable
// render from a stalled one as render.Render's caller does.
const (
	classRetryable = "retryable"
	classValues    = "values"
	classNotFound  = "notfound"
	classNoKey     = "nokey"
)

// wireError is an error with the class its caller branches on.
type wireError struct {
	Message string `json:"message"`
	Class   string `json:"class,omitempty"`
}

// errorOf turns err into its wire form (nil for nil), keeping its class.
func errorOf(err error, classify func(error) string) *wireError {
	if err == nil {
		return nil
	}
	return &wireError{Message: err.Error(), Class: classify(err)}
}

// renderClass is the class of a render.Render error.
func renderClass(err error) string {
	switch {
	case render.IsRetryable(err):
		return classRetryable
	case render.IsValuesError(err):
		return classValues
	}
	return ""
}

// toError turns a wire error back into an error of its class.
func (e *wireError) toError() error {
	if e == nil {
		return nil
	}
	err := errors.New(e.Message)
	switch e.Class {
	case classRetryable:
		return &render.RetryableError{Err: err}
	case classValues:
		return &render.ValuesError{Err: err}
	}
	return err
}

// errFrameTooLarge is a frame over the reader's limit.
var errFrameTooLarge = errors.New("frame over the size limit")

// writeFrame writes m as one frame.
func writeFrame(w io.Writer, m *message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding a %s frame: %w", m.Kind, err)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame of at most max bytes (errFrameTooLarge past it, before
// reading its body).
func readFrame(r io.Reader, max int64) (*message, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, max)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	m := &message{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("decoding a frame: %w", err)
	}
	return m, nil
}
