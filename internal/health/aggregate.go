package health

import "fmt"

// Object is the health of one object, named by its subject ("Kind/namespace/name").
type Object struct {
	Subject string
	Result
}

// String is "subject (reason: message)", as waits name what they wait for.
func (o Object) String() string {
	if o.Message == "" {
		return fmt.Sprintf("%s (%s)", o.Subject, o.word())
	}
	return fmt.Sprintf("%s (%s: %s)", o.Subject, o.word(), o.Message)
}

// word is the Reason, or the Status when the judge gave none.
func (r Result) word() string {
	if r.Reason == "" {
		return string(r.Status)
	}
	return r.Reason
}

// Summary is the health of a set of objects.
type Summary struct {
	// Status is the worst status of the objects (Order: Healthy is best, then
	// Progressing, Unknown, Missing, Degraded); Healthy for no objects.
	Status Status
	// Message names the least healthy object and its judge's message.
	Message string
	// Objects maps each object's subject to its status.
	Objects map[string]Status
}

// Aggregate is the worst-wins health of objs; among equally bad objects the first one
// is named.
func Aggregate(objs []Object) *Summary {
	h := &Summary{Status: Healthy, Objects: make(map[string]Status, len(objs))}
	worst, unhealthy := -1, 0
	for i, o := range objs {
		h.Objects[o.Subject] = o.Status
		if o.Status != Healthy {
			unhealthy++
		}
		if worst < 0 || o.Status.Worse(h.Status) {
			worst, h.Status = i, o.Status
		}
	}
	switch {
	case len(objs) == 0:
		h.Message = "no objects"
	case unhealthy == 0:
		h.Message = fmt.Sprintf("all %d objects are healthy", len(objs))
	default:
		w := objs[worst]
		h.Message = w.Subject + ": " + w.Message
		if w.Message == "" {
			h.Message = w.Subject + ": " + w.word()
		}
		if unhealthy > 1 {
			h.Message += fmt.Sprintf(" (%d more objects not healthy)", unhealthy-1)
		}
	}
	return h
}
