// Package syncwindow decides whether an Application may sync at a given time, from its
// allow and deny windows (cron schedules with a duration and a time zone), and until when.
package syncwindow
