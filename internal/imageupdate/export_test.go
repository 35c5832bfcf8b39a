package imageupdate

// SetBeforePush sets the hook run before each push (nil: none).
func SetBeforePush(f func(attempt int)) { beforePush = f }
