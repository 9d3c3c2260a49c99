package state

// Delta is a state change split by scope. Keys keep their prefixes, so the
// scopes never collide and Merge is a plain union. A nil value deletes its key.
type Delta struct {
	App, User, Session, Temp map[string]any
}

// Split validates every key and value of delta and sorts them by scope.
// Values come out normalized (see Normalize). Nothing is returned on error,
// so a caller that stops at the first error has applied nothing.
func Split(delta map[string]any, maxValueBytes int) (Delta, error) {
	var d Delta
	for key, value := range delta {
		scope, err := ScopeOf(key)
		if err != nil {
			return Delta{}, err
		}
		if value != nil {
			if value, err = Normalize(key, value, maxValueBytes); err != nil {
				return Delta{}, err
			}
		}
		part := d.part(scope)
		if *part == nil {
			*part = make(map[string]any)
		}
		(*part)[key] = value
	}
	return d, nil
}

func (d *Delta) part(s Scope) *map[string]any {
	switch s {
	case ScopeApp:
		return &d.App
	case ScopeUser:
		return &d.User
	case ScopeTemp:
		return &d.Temp
	default:
		return &d.Session
	}
}

// Stored returns the part of the delta that backends persist: everything but temp: keys.
func (d Delta) Stored() map[string]any {
	return Merge(d.App, d.User, d.Session)
}

// Merge returns the union of scoped maps: one session's view of its app,
// user and session state. The inputs are not modified.
func Merge(scopes ...map[string]any) map[string]any {
	n := 0
	for _, m := range scopes {
		n += len(m)
	}
	out := make(map[string]any, n)
	for _, m := range scopes {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Apply writes delta into dst: nil values delete their key.
func Apply(dst, delta map[string]any) {
	for k, v := range delta {
		if v == nil {
			delete(dst, k)
		} else {
			dst[k] = v
		}
	}
}
